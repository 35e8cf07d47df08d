package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Heal scenarios (issue 11). A component of the path is SIGKILLed and
// started again; each scenario logs one "heal figure:" line, the time from
// the kill until every client has been granted its connection again (the
// connection files' modification times), and then requires every pod to hold
// exactly what the new IP contexts say.

const (
	// readdressCIDR is where the re-addressing endpoint moves its clients;
	// it reaches routeThroughClient through each client, and
	// rerouteThroughClient once rerouted (TEST-NET-3: nothing is sent there).
	readdressCIDR        = "172.16.101.0/24"
	routeThroughClient   = "203.0.113.0/25"
	rerouteThroughClient = "203.0.113.128/25"
	// refreshLifetime is the token lifetime of the scenario whose endpoint
	// changes its clients' IP contexts: clients refresh about every third of
	// it.
	refreshLifetime = 30 * time.Second
)

// The endpoint is SIGKILLed while two clients with policy routes are
// connected, and started again at once (its pod and the interfaces the
// forwarder put there stay). Its IPAM forgets what it handed out (field
// report 2): each client must end with exactly what its new IP context says.
func TestHealAfterEndpointRestartWithTwoClients(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{report: "endpoint restart, two clients", tag: "hnse", kernelType: "tap", linkType: "tuntap", nodes: 1, requestTimeout: crashRequestTimeout}
	ctx, d, rep := startScenario(t, sc, shortScenarioTime)
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR, domain.WithPolicyRoutes(crashPolicies...))
	require.NoError(t, err)
	clients := connectClients(ctx, t, d, sc, "nsc-a", "nsc-b")
	rep.step("connected: kernel state, ping")
	requireAllConnected(ctx, t, sc, nse, clients)

	rep.step("endpoint restart")
	killedAt := time.Now()
	require.NoError(t, nse.Restart(ctx))
	registeredAfter := time.Since(killedAt)
	rep.step("heal: both clients granted again")
	healed := requireHealed(t, killedAt, clients...)
	rep.recovered(healed)
	rep.step("healed: kernel state as the new contexts say, ping")
	requireAllConnected(ctx, t, sc, nse, clients)
	logHealFigure(t, "endpoint SIGKILL and restart, two clients", healed,
		fmt.Sprintf("the new endpoint was registered %s after the kill", registeredAfter.Round(100*time.Millisecond)))

	rep.step("close leaves nothing")
	for _, client := range clients {
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	}
	requireAllIdle(ctx, t, d, nse, clients)
	rep.step("endpoint unregisters")
	requireEndpointUnregisters(ctx, t, d, nse)
}

// The node's nsmgr is SIGKILLed under a connected client and started again:
// the client heals through the new nsmgr, and nothing in either pod changes.
func TestHealAfterNsmgrRestart(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{report: "nsmgr restart", tag: "hmgr", kernelType: "tap", linkType: "tuntap", nodes: 1, requestTimeout: crashRequestTimeout}
	ctx, d, nse, client, before := connectWithPolicy(t, sc)
	rep := reportOf(t)

	rep.step("nsmgr restart")
	killedAt := time.Now()
	require.NoError(t, d.RestartNsmgr(ctx, d.Nodes[0]))
	servingAfter := time.Since(killedAt)
	rep.step("heal: client granted again")
	healed := requireHealed(t, killedAt, client)
	rep.recovered(healed)
	rep.step("healed: kernel state, ping")
	after := requireConnected(ctx, t, d, sc, client, nse)
	if ourDesign(d) {
		require.Equal(t, before.clientState.Rules, after.clientState.Rules,
			"the client's policy rules changed across the nsmgr's restart\nbefore:\n%s\nafter:\n%s", before.clientState, after.clientState)
	}
	logHealFigure(t, "nsmgr SIGKILL and restart", healed,
		fmt.Sprintf("the new nsmgr served %s after the kill", servingAfter.Round(100*time.Millisecond)))
	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// The endpoint changes what its client's connection says on a refresh,
// without any restart (same interfaces), in two steps: first the route it has
// through the client moves to another prefix (addresses unchanged), then the
// client and the endpoint get new addresses. After each step both pods must
// hold exactly what the new IP context says: nothing of the old route, the
// old addresses, their routes or the old address's policy rule.
func TestEndpointChangesItsClientsContextOnRefresh(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{tag: "hctx", kernelType: "tap", linkType: "tuntap", nodes: 1, tokenLifetime: refreshLifetime, requestTimeout: crashRequestTimeout}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	nse, err := d.StartEndpoint(ctx, d.Nodes[0], "nse", service, endpointCIDR, domain.WithPolicyRoutes(crashPolicies...),
		domain.WithRoutesThroughClients(routeThroughClient, rerouteThroughClient), domain.WithReaddressPrefix(readdressCIDR))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requirePolicies(t, client)
	before := requireConnected(ctx, t, d, sc, client, nse)
	require.Equal(t, []string{routeThroughClient}, routesThroughClient(before.ipContext))
	requireAddressesIn(t, before.ipContext, endpointCIDR)

	require.NoError(t, nse.Reroute(ctx))
	rerouted := requireRefreshedTo(t, client, "the route through the client moved to "+rerouteThroughClient, func(ipc *networkservice.IPContext) bool {
		return slices.Equal(routesThroughClient(ipc), []string{rerouteThroughClient})
	})
	requireConnected(ctx, t, d, sc, client, nse)
	require.Equal(t, before.ipContext.GetSrcIpAddrs(), rerouted.GetSrcIpAddrs(), "rerouting changed the client's addresses")

	require.NoError(t, nse.Readdress(ctx))
	requireRefreshedTo(t, client, "addresses in "+readdressCIDR, func(ipc *networkservice.IPContext) bool {
		return addressesIn(ipc, readdressCIDR)
	})
	requirePolicies(t, client)
	requireConnected(ctx, t, d, sc, client, nse)
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// requireRefreshedTo waits, for up to the token lifetime, until a refresh
// brought the client a connection whose IP context satisfies want, and
// returns that context.
func requireRefreshedTo(t *testing.T, client *domain.Client, what string, want func(*networkservice.IPContext) bool) *networkservice.IPContext {
	t.Helper()
	since := time.Now()
	var ipContext *networkservice.IPContext
	waitUntil(t, since.Add(refreshLifetime), 250*time.Millisecond, func() bool {
		if client.ReloadConnections() != nil || len(client.Connections) != 1 {
			return false
		}
		ipContext = client.Connections[0].GetContext().GetIpContext()
		return want(ipContext)
	}, func() string {
		return fmt.Sprintf("no refresh brought %s within %s; the client's IP context: %v\n%s", what, refreshLifetime, ipContext, client.Proc.LogTail(20))
	})
	t.Logf("a refresh brought %s %s after the endpoint's change", what, time.Since(since).Round(100*time.Millisecond))
	return ipContext
}

// routesThroughClient lists the endpoint's routes through the client other
// than the on-link routes to the client's own addresses.
func routesThroughClient(ipContext *networkservice.IPContext) []string {
	var through []string
	for _, r := range ipContext.GetDstRoutes() {
		if !slices.ContainsFunc(ipContext.GetSrcIpAddrs(), func(addr string) bool {
			return netip.MustParsePrefix(addr) == netip.MustParsePrefix(r.GetPrefix())
		}) {
			through = append(through, r.GetPrefix())
		}
	}
	return through
}

// connectWithPolicy brings sc's domain up with an endpoint that gives each
// client several policy routes (crashPolicies), connects one client and
// checks both pods: how every crash scenario with one client starts.
func connectWithPolicy(t *testing.T, sc scenario) (context.Context, *domain.Domain, *domain.Endpoint, *domain.Client, connectionView) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	t.Cleanup(cancel)
	d := startDomain(ctx, t, sc)
	policies := sc.policies
	if policies == nil {
		policies = crashPolicies
	}
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, cmp.Or(sc.cidr, endpointCIDR), domain.WithPolicyRoutes(policies...))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requirePolicySelectors(t, client, policies)
	view := requireConnected(ctx, t, d, sc, client, nse)
	if ourDesign(d) {
		requirePolicyTablesInRange(t, view.clientState)
	}
	return ctx, d, nse, client, view
}

// logHealFigure prints one heal figure in the form README and docs/e2e.md
// quote.
func logHealFigure(t *testing.T, what string, healed time.Duration, detail string) {
	t.Helper()
	t.Logf("heal figure: %s: every client granted again %s after the SIGKILL (%s)", what, healed.Round(100*time.Millisecond), detail)
}

// requireHealed waits until every client has been granted its connection
// again after since, reloads what each holds, and returns how long after
// since the last of them was granted.
func requireHealed(t *testing.T, since time.Time, clients ...*domain.Client) time.Duration {
	t.Helper()
	var healed time.Duration
	for _, client := range clients {
		requireGrantedAgainAfter(t, client, since)
		written, err := client.ConnectionsWritten()
		require.NoError(t, err)
		healed = max(healed, written.Sub(since))
		require.NoError(t, client.ReloadConnections())
		require.Len(t, client.Connections, 1)
	}
	return healed
}

// connectClients connects one client per name, each in its own pod.
func connectClients(ctx context.Context, t *testing.T, d *domain.Domain, sc scenario, names ...string) []*domain.Client {
	t.Helper()
	clients := make([]*domain.Client, 0, len(names))
	for _, name := range names {
		client, err := d.Connect(ctx, d.Nodes[sc.clientNode], name, fmt.Sprintf("kernel://%s/%s", service, clientIfname))
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)
		requirePolicies(t, client)
		clients = append(clients, client)
	}
	return clients
}

// requireAllConnected checks, for clients sharing one endpoint, that each
// client pod holds exactly what its connection says, that the endpoint pod
// holds one interface per connection with exactly that connection's
// addresses and routes and nothing else, and that ping works both ways on
// every connection.
func requireAllConnected(ctx context.Context, t *testing.T, sc scenario, nse *domain.Endpoint, clients []*domain.Client) {
	t.Helper()
	conns := make([]*networkservice.Connection, 0, len(clients))
	for _, client := range clients {
		conn := client.Connections[0]
		conns = append(conns, conn)
		ipContext := conn.GetContext().GetIpContext()
		state, err := topology.Inspect(client.Pod.Netns)
		require.NoError(t, err)
		where := "client pod " + client.Name
		requireKernelMatches(t, where, state, clientIfname, ipContext.GetSrcIpAddrs(), clientRoutes(ipContext), ipContext.GetPolicies())
		link, _ := state.Link(clientIfname)
		require.Equal(t, sc.linkType, link.Type, "%s: interface kind\n%s", where, state)
	}
	nseState, err := topology.Inspect(nse.Pod.Netns)
	require.NoError(t, err)
	nseIfnames := requireEndpointPodMatches(t, nseState, conns)
	for i, client := range clients {
		ipContext := conns[i].GetContext().GetIpContext()
		for _, dst := range ipContext.GetDstIpAddrs() {
			requirePing(ctx, t, client.Pod.Netns, clientIfname, dst)
		}
		for _, src := range ipContext.GetSrcIpAddrs() {
			requirePing(ctx, t, nse.Pod.Netns, nseIfnames[i], src)
		}
	}
}

// requireEndpointPodMatches requires the endpoint pod to hold exactly one
// interface per connection, up, with exactly its destination addresses, the
// routes NSM's kernel semantics derive from each context through its
// interface and nothing else, and no rule; it returns each connection's
// interface.
func requireEndpointPodMatches(t *testing.T, state *topology.State, conns []*networkservice.Connection) []string {
	t.Helper()
	var nsmLinks []topology.Link
	for _, l := range state.Links {
		if l.Name != "lo" {
			nsmLinks = append(nsmLinks, l)
		}
	}
	require.Len(t, nsmLinks, len(conns), "endpoint pod: one NSM interface per connection\n%s", state)
	ifnames := make([]string, len(conns))
	var want, got []string
	for i, conn := range conns {
		ipContext := conn.GetContext().GetIpContext()
		dst := normalizePrefixes(t, ipContext.GetDstIpAddrs())
		for _, l := range nsmLinks {
			if fmt.Sprint(normalizePrefixes(t, l.Addrs)) == fmt.Sprint(dst) {
				require.Empty(t, ifnames[i], "endpoint pod: two interfaces hold %v\n%s", dst, state)
				require.True(t, l.Up, "endpoint pod: %s is down\n%s", l.Name, state)
				ifnames[i] = l.Name
			}
		}
		require.NotEmpty(t, ifnames[i], "endpoint pod: no interface holds exactly %v (connection %s)\n%s", dst, conn.GetId(), state)
		for _, r := range endpointRoutes(ipContext) {
			want = append(want, r.String(ifnames[i])+" table 254")
		}
	}
	for _, r := range state.Routes {
		got = append(got, (route{dst: r.Dst, gw: r.Gw}).String(r.Link)+fmt.Sprintf(" table %d", r.Table))
	}
	sort.Strings(want)
	sort.Strings(got)
	require.Equal(t, want, got, "endpoint pod: routes\n%s", state)
	require.Empty(t, state.Rules, "endpoint pod: rules\n%s", state)
	return ifnames
}

// requireAllIdle requires every client pod and the endpoint pod to be fresh
// namespaces again, and every simulator and node namespace to be as before
// the first connection.
func requireAllIdle(ctx context.Context, t *testing.T, d *domain.Domain, nse *domain.Endpoint, clients []*domain.Client) {
	t.Helper()
	for _, client := range clients {
		requireEventuallyEmpty(t, "client pod "+client.Name, client.Pod.Netns)
	}
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, node := range d.Nodes {
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
	}
}

// requireAddressesIn requires every address of the context to lie in cidr.
func requireAddressesIn(t *testing.T, ipContext *networkservice.IPContext, cidr string) {
	t.Helper()
	require.True(t, addressesIn(ipContext, cidr), "addresses outside %s: %v", cidr, ipContext)
}

// addressesIn says whether the context has addresses on both sides, all in
// cidr.
func addressesIn(ipContext *networkservice.IPContext, cidr string) bool {
	prefix := netip.MustParsePrefix(cidr)
	addrs := append(append([]string(nil), ipContext.GetSrcIpAddrs()...), ipContext.GetDstIpAddrs()...)
	if len(ipContext.GetSrcIpAddrs()) == 0 || len(ipContext.GetDstIpAddrs()) == 0 {
		return false
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a)
		if err != nil || !prefix.Contains(p.Addr()) {
			return false
		}
	}
	return true
}
