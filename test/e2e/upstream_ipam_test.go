package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Scenarios of deployments-k8s v1.18.0's examples/features about what endpoints hand out
// (issue 24, docs/upstream-examples.md): exclude-prefixes and ipam-policies.

// features/exclude-prefixes: the cluster's excluded prefixes (upstream's ConfigMap, which the
// cmd-exclude-prefixes-k8s sidecar writes into every nsmgr pod) hold 172.16.1.201/32 and
// 172.16.1.202/32; the endpoint hands out 172.16.1.200/30; so the endpoint takes 172.16.1.200 and
// the client 172.16.1.203, the two addresses left. Upstream's pings both ways between them; no
// excluded address in either pod; Close leaves nothing.
func TestUpstreamFeaturesExcludePrefixes(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fexcl", 1, realVPP), "upstream features/exclude-prefixes")
		excluded := []string{"172.16.1.201/32", "172.16.1.202/32"}
		sc.excludedPrefixes = excluded
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[0]
		const serviceName = "exclude-prefixes"
		nse, err := d.StartEndpoint(ctx, node, "nse-kernel", serviceName, "172.16.1.200/30")
		require.NoError(t, err)
		client, err := d.Connect(ctx, node, "alpine", "kernel://"+serviceName+"/"+clientIfname)
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)

		rep.step("connected: the addresses left by the exclusion, pings")
		ipc := client.Connections[0].GetContext().GetIpContext()
		require.Equal(t, []string{"172.16.1.203/32"}, normalizePrefixes(t, ipc.GetSrcIpAddrs()), "the client's addresses")
		require.Equal(t, []string{"172.16.1.200/32"}, normalizePrefixes(t, ipc.GetDstIpAddrs()), "the endpoint's addresses")
		require.Subset(t, ipc.GetExcludedPrefixes(), excluded, "the nsmgr adds the cluster's excluded prefixes to the Request")
		requireConnected(ctx, t, d, sc, client, nse)
		for _, pod := range []string{client.Pod.Netns, nse.Pod.Netns} {
			requireNoAddressIn(t, pod, excluded...)
		}
		requireUpstreamPing(ctx, t, client.Pod.Netns, "172.16.1.203", "172.16.1.200")
		requireUpstreamPing(ctx, t, nse.Pod.Netns, "172.16.1.200", "172.16.1.203")

		rep.step("close leaves nothing")
		requireCloseLeavesNothing(ctx, t, d, client, nse)
	})
}

// features/ipam-policies: two clients (nsm-1 and nsm-2, each in its own pod) to the first
// endpoint (the default, polite IPAM, 172.16.1.0/29); pings both ways; the first endpoint's pod
// deleted; a second endpoint with the strict IPAM policy and 172.16.2.0/29; both clients heal onto
// it; pings both ways; upstream's `ip route show dev nsm-N` in each client holds only the route to
// its new endpoint address, and (beyond upstream) no address or route of 172.16.1.0/29 is left in
// either client pod: the strict policy dropped them from the connections, so the forwarder
// removed them (field report 2). Close leaves nothing.
func TestUpstreamFeaturesIpamPolicies(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fipam", 1, realVPP), "upstream features/ipam-policies")
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[0]
		const serviceName = "ipam-policies"
		first, err := d.StartEndpoint(ctx, node, "first-nse", serviceName, "172.16.1.0/29")
		require.NoError(t, err)
		var clients []*ipamClient
		for i, name := range []string{"alpine-1", "alpine-2"} {
			ifname := fmt.Sprintf("nsm-%d", i+1)
			client, connectErr := d.Connect(ctx, node, name, "kernel://"+serviceName+"/"+ifname)
			require.NoError(t, connectErr)
			clients = append(clients, &ipamClient{Client: client, ifname: ifname})
		}

		rep.step("connected to the first endpoint: pings")
		firstPrefix := netip.MustParsePrefix("172.16.1.0/29")
		for _, c := range clients {
			c.requireServed(ctx, t, first, firstPrefix)
		}

		rep.step("first endpoint's pod deleted, second (strict IPAM) started")
		// As in heal/local-nse-death: the pod's interfaces go first, as with its namespace.
		deletePodLinks(ctx, t, first.Pod.Netns)
		deletedAt := time.Now()
		require.NoError(t, first.Close())
		requireEventuallyUnregistered(ctx, t, d, first.Name)
		second, err := d.StartEndpoint(ctx, node, "second-nse", serviceName, "172.16.2.0/29",
			domain.WithStrictIPAM())
		require.NoError(t, err)

		rep.step("heal: both clients on the second endpoint")
		secondPrefix := netip.MustParsePrefix("172.16.2.0/29")
		for _, c := range clients {
			waitUntil(t, deletedAt.Add(2*healTimeout), 250*time.Millisecond, func() bool {
				return c.ReloadConnections() == nil && len(c.Connections) == 1 &&
					c.Connections[0].GetNetworkServiceEndpointName() == second.Name
			}, func() string {
				return fmt.Sprintf("%s did not heal onto %s within %s:\n%s", c.Name, second.Name, 2*healTimeout, c.Proc.LogTail(30))
			})
		}
		healed := requireHealed(t, deletedAt, clients[0].Client, clients[1].Client)
		rep.recovered(healed)
		t.Logf("both clients were granted the second endpoint %s after the first one's deletion", healed.Round(100*time.Millisecond))

		rep.step("healed: only the second endpoint's prefix in the clients, pings")
		for _, c := range clients {
			c.requireServed(ctx, t, second, secondPrefix)
			requireNoAddressIn(t, c.Pod.Netns, firstPrefix.String())
			c.requireUpstreamRoutes(ctx, t)
		}

		rep.step("close leaves nothing")
		for _, c := range clients {
			require.NoError(t, c.Close(), "the Close of %s failed:\n%s", c.Name, c.Proc.LogTail(20))
			requireEventuallyEmpty(t, "pod of "+c.Name, c.Pod.Netns)
		}
		requireIdleThenStopEndpoint(ctx, t, d, clients[0].Client, second)
	})
}

// ipamClient is one client of ipam-policies with its interface's name.
type ipamClient struct {
	*domain.Client
	ifname string
}

// requireServed requires c's connection to end at nse with exactly one address each side, both
// in prefix; the client pod to hold exactly that address on its interface, up, and nothing of
// another prefix routed through it; and upstream's pings both ways.
func (c *ipamClient) requireServed(ctx context.Context, t *testing.T, nse *domain.Endpoint, prefix netip.Prefix) {
	t.Helper()
	require.NoError(t, c.ReloadConnections())
	require.Len(t, c.Connections, 1)
	conn := c.Connections[0]
	require.Equal(t, nse.Name, conn.GetNetworkServiceEndpointName(), "%s's endpoint", c.Name)
	ipc := conn.GetContext().GetIpContext()
	src, dst := normalizePrefixes(t, ipc.GetSrcIpAddrs()), normalizePrefixes(t, ipc.GetDstIpAddrs())
	require.Len(t, src, 1, "%s's addresses: %v", c.Name, src)
	require.Len(t, dst, 1, "%s's endpoint addresses: %v", c.Name, dst)
	clientAddr, nseAddr := netip.MustParsePrefix(src[0]).Addr(), netip.MustParsePrefix(dst[0]).Addr()
	require.True(t, prefix.Contains(clientAddr) && prefix.Contains(nseAddr), "%s: %s and %s not both in %s", c.Name, clientAddr, nseAddr, prefix)
	waitFor(t, 100*time.Millisecond, func() bool {
		state, err := topology.Inspect(c.Pod.Netns)
		if err != nil {
			return false
		}
		link, ok := state.Link(c.ifname)
		return ok && link.Up && equalStrings(src, normalizePrefixes(t, link.Addrs))
	}, func() string {
		state, _ := topology.Inspect(c.Pod.Netns)
		return fmt.Sprintf("pod of %s: %s does not hold exactly %v\n%s", c.Name, c.ifname, src, state)
	})
	requireUpstreamPing(ctx, t, c.Pod.Netns, clientAddr.String(), nseAddr.String())
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr.String(), clientAddr.String())
}

// requireUpstreamRoutes runs upstream's `ip route show dev nsm-N` in c's pod: one route, to the
// endpoint's address of c's connection (this forwarder's routes also print its `proto 250`).
func (c *ipamClient) requireUpstreamRoutes(ctx context.Context, t *testing.T) {
	t.Helper()
	nseAddr := netip.MustParsePrefix(normalizePrefixes(t, c.Connections[0].GetContext().GetIpContext().GetDstIpAddrs())[0]).Addr()
	out, err := exec.CommandContext(ctx, "ip", "-n", c.Pod.Netns, "route", "show", "dev", c.ifname).CombinedOutput()
	require.NoError(t, err, "ip route show dev %s:\n%s", c.ifname, out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 1, "pod of %s: ip route show dev %s:\n%s", c.Name, c.ifname, out)
	require.Equal(t, nseAddr.String(), strings.Fields(lines[0])[0], "pod of %s: ip route show dev %s:\n%s", c.Name, c.ifname, out)
}

// requireNoAddressIn requires no interface of the namespace to hold an address in any of
// prefixes, and no route to lead into one.
func requireNoAddressIn(t *testing.T, netns string, prefixes ...string) {
	t.Helper()
	state, err := topology.Inspect(netns)
	require.NoError(t, err)
	for _, p := range prefixes {
		prefix := netip.MustParsePrefix(p)
		for _, link := range state.Links {
			for _, a := range link.Addrs {
				addr, parseErr := netip.ParsePrefix(a)
				require.NoError(t, parseErr)
				require.False(t, prefix.Contains(addr.Addr()), "%s: %s holds %s, in %s\n%s", netns, link.Name, a, prefix, state)
			}
		}
		for _, r := range state.Routes {
			dst, parseErr := netip.ParsePrefix(r.Dst)
			if parseErr != nil {
				continue // the default route
			}
			require.False(t, prefix.Overlaps(dst), "%s: a route to %s, in %s\n%s", netns, r.Dst, prefix, state)
		}
	}
}
