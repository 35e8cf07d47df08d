package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Scenarios of deployments-k8s v1.18.0's examples/features, examples/multiforwarder and
// examples/use-cases (issue 24, docs/upstream-examples.md), beside upstream_test.go's. Each
// does what the example's README does and ends with the harness's baseline check: nothing left
// in any pod, node namespace or VPP after Close.

// selectForwarderLabel is the label upstream's second forwarder DaemonSet (my-forwarder-vpp)
// registers with, and its network service matches.
const selectForwarderLabel = "my_forwarder_capability"

// features/select-forwarder: a second forwarder on the node registers with
// my_forwarder_capability:true (NSM_LABELS); the service select-forwarder matches that label;
// the endpoint registers for it. Pings both ways; the client's path names the labelled
// forwarder (upstream greps the client's log for it); the default forwarder holds nothing of
// the connection; Close leaves nothing in either forwarder's VPP.
func TestUpstreamFeaturesSelectForwarder(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoForwarders(t, withReport(upstreamScenario("fsel", 1, realVPP), "upstream features/select-forwarder"), true)
	})
}

// multiforwarder + use-cases/Kernel2Kernel: a second forwarder on the node, a service without
// matches, so the nsmgr may hand the connection to either. Upstream's second forwarder is
// forwarder-sriov; here it is a second forwarder of the same kind, each with its own VPP. The
// forwarder that carries the connection holds it whole, the other holds nothing, and Close
// leaves nothing in either.
func TestUpstreamMultiforwarderKernel2Kernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoForwarders(t, withReport(upstreamScenario("fmfk", 1, realVPP), "upstream multiforwarder + Kernel2Kernel"), false)
	})
}

// runTwoForwarders runs a second forwarder beside the node's, labelled as upstream's
// my-forwarder-vpp, an endpoint and a client on the node; with selectByLabel the service
// matches the label, so the labelled forwarder must carry the connection.
func runTwoForwarders(t *testing.T, sc scenario, selectByLabel bool) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, rep := startScenario(t, sc, shortScenarioTime)
	node := d.Nodes[0]
	mine, err := d.AddForwarder(ctx, node, "my-forwarder-vpp-"+node.Name, map[string]string{"p2p": "true", selectForwarderLabel: "true"})
	require.NoError(t, err)

	const serviceName = "select-forwarder"
	netsvc := &registryapi.NetworkService{Name: serviceName, Payload: "ETHERNET"}
	if selectByLabel {
		netsvc.Matches = []*registryapi.Match{{Metadata: &registryapi.Metadata{Labels: map[string]string{selectForwarderLabel: "true"}}}}
	}
	serviceFile := filepath.Join(t.TempDir(), "service.json")
	require.NoError(t, domain.WriteServiceFile(serviceFile, netsvc))
	nse, err := d.StartEndpoint(ctx, node, "nse-kernel", serviceName, "169.254.0.0/16", domain.WithServiceFile(serviceFile))
	require.NoError(t, err)
	client, err := d.Connect(ctx, node, "alpine", "kernel://"+serviceName+"/"+clientIfname)
	require.NoError(t, err)
	rep.step("connected: the right forwarder carries it, pings, the other holds nothing")
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]

	carrier, idle := node, mine
	if forwarderOnPath(conn, mine.ForwarderName) {
		carrier, idle = mine, node
	}
	if selectByLabel {
		require.Equal(t, mine.ForwarderName, carrier.ForwarderName, "the nsmgr did not select the labelled forwarder: path %v", pathNames(conn))
	}
	require.True(t, forwarderOnPath(conn, carrier.ForwarderName), "neither forwarder is on the client's path %v", pathNames(conn))
	require.False(t, forwarderOnPath(conn, idle.ForwarderName), "both forwarders on the client's path %v", pathNames(conn))
	t.Logf("%s carries the connection (path %v)", carrier.ForwarderName, pathNames(conn))

	view := requireConnected(ctx, t, d, sc, client, nse)
	clientAddr, nseAddr := addrOf(t, view.ipContext.GetSrcIpAddrs()[0]), addrOf(t, view.ipContext.GetDstIpAddrs()[0])
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
	interfaces, err := d.VPPInterfaces(ctx, carrier)
	require.NoError(t, err)
	require.False(t, sameInterfaces(interfaces, carrier.IdleInterfaces), "%s's VPP holds nothing of the connection: %v", carrier.ForwarderName, interfaces)
	requireVPPClean(ctx, t, d, idle)
	if ourDesign(d) {
		requireJournalEmpty(ctx, t, d, idle)
		require.Len(t, inspectJSON(ctx, t, d, carrier).Connections, 1, "%s's journal", carrier.ForwarderName)
	}

	rep.step("close leaves nothing")
	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, f := range []*domain.Node{node, mine} {
		requireVPPClean(ctx, t, d, f)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, f)
		}
	}
	requireNodeKernelClean(t, node)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// skipUnlessFeaturesSlow keeps a scenario out of `make test`, whose time is budgeted: it runs
// one scenario of each upstream folder (select-forwarder, mutually-aware-nses and multiforwarder
// here), and E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs the rest, as does `make compare`.
func skipUnlessFeaturesSlow(t *testing.T) {
	if os.Getenv("E2E_UPSTREAM_SLOW") == "" && os.Getenv(compare.ResultsVariable) == "" {
		t.Skip("issue 24: beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
	}
}

// withReport names the row `make compare` records sc's runs under.
func withReport(sc scenario, report string) scenario {
	sc.report = report
	return sc
}

// forwarderOnPath says whether name is a segment of conn's path.
func forwarderOnPath(conn *networkservice.Connection, name string) bool {
	return slices.Contains(pathNames(conn), name)
}

func pathNames(conn *networkservice.Connection) []string {
	var names []string
	for _, s := range conn.GetPath().GetPathSegments() {
		names = append(names, s.GetName())
	}
	return names
}

// serviceEnd is one of a client's two services: its name, the endpoint serving it (its pod's
// name, its NSM_CIDR_PREFIX, its policies file's content or none), and the interface the client
// asks for.
type serviceEnd struct {
	service, nse, cidr, ifname, policies string
	// labels are added to the client's request (kernel://service/ifname?labels).
	labels string
}

func (s serviceEnd) url() string {
	u := "kernel://" + s.service + "/" + s.ifname
	if s.labels != "" {
		u += "?" + s.labels
	}
	return u
}

// features/multiple-services: one client, two services, each served by its own endpoint
// (172.16.1.100/31, 172.16.2.100/31); pings to and from both (upstream's four pings). Then
// one connection closed: the other keeps its interface, addresses and routes and still pings;
// then Close leaves nothing.
func TestUpstreamFeaturesMultipleServices(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoServices(t, withReport(upstreamScenario("fmsv", 1, realVPP), "upstream features/multiple-services"), [2]serviceEnd{
			{service: "multiple-services-1", nse: "nse-kernel-1", cidr: "172.16.1.100/31", ifname: "nsm-1"},
			{service: "multiple-services-2", nse: "nse-kernel-2", cidr: "172.16.2.100/31", ifname: "nsm-2"},
		}, nil)
	})
}

// features/exclude-prefixes-client: two services whose endpoints hand out addresses from the same
// 172.16.1.96/29; the client's excluded prefixes (sdk's excludedprefixes client, as in cmd-nsc)
// keep the first connection's addresses out of the second's, so the second endpoint takes .98 and
// gives .99. Pings to and from both at upstream's addresses; one closed, the other whole; Close
// leaves nothing.
func TestUpstreamFeaturesExcludePrefixesClient(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoServices(t, withReport(upstreamScenario("fexc", 1, realVPP), "upstream features/exclude-prefixes-client"), [2]serviceEnd{
			{service: "nsm-service-1", nse: "nse-kernel-1", cidr: "172.16.1.96/29", ifname: "nsm-1"},
			{service: "nsm-service-2", nse: "nse-kernel-2", cidr: "172.16.1.96/29", ifname: "nsm-2"},
		}, [][2]string{{"172.16.1.97", "172.16.1.96"}, {"172.16.1.99", "172.16.1.98"}})
	})
}

// runTwoServices runs two endpoints and one client asking for both services, and requires both
// connections whole side by side (each interface its own addresses and routes, pings both ways
// between the pairs of addresses, want's when given: client's, endpoint's); then the client closes
// its second connection: the first keeps its interface, addresses and routes and still pings;
// then Close leaves nothing.
func runTwoServices(t *testing.T, sc scenario, ends [2]serviceEnd, want [][2]string, checks ...routeGet) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, rep := startScenario(t, sc, shortScenarioTime)
	node := d.Nodes[0]
	var nses []*domain.Endpoint
	var urls []string
	for _, end := range ends {
		nses = append(nses, startServiceEndpoint(ctx, t, d, node, end))
		urls = append(urls, end.url())
	}
	var env []string
	if ends[0].labels != "" {
		// Upstream's mutually-aware-nses: the two connections may share addresses.
		env = append(env, "NSM_AWARENESS_GROUPS=["+strings.Join(urls, ",")+"]")
	}
	client, err := d.StartClientWithEnv(node, "alpine", env, urls...)
	require.NoError(t, err)
	waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	require.NoError(t, client.WaitGranted(waitCtx), "the client was not granted both services:\n%s", client.Proc.LogTail(20))
	require.Len(t, client.Connections, 2)

	rep.step("both connected: each interface its own, pings, route checks")
	pairs := requireTwoConnections(t, client, nses, ends)
	// Mutually aware connections share their addresses: a reply to either endpoint leaves by
	// whichever interface holds the main table's route, so upstream pings neither.
	shared := pairs[0] == pairs[1]
	for i, pair := range pairs {
		if want != nil {
			require.Equal(t, want[i], pair, "connection %d (%s): client's and endpoint's addresses", i+1, ends[i].service)
		}
		if !shared {
			requireUpstreamPing(ctx, t, client.Pod.Netns, pair[0], pair[1])
			requireUpstreamPing(ctx, t, nses[i].Pod.Netns, pair[1], pair[0])
		}
	}
	for _, check := range checks {
		check.require(ctx, t, client)
	}

	rep.step("one closed: the other whole")
	first := linkIdentity(t, client.Pod.Netns, ends[0].ifname)
	require.NoError(t, client.CloseLast(ctx))
	require.Len(t, client.Connections, 1)
	requireEventuallyEmpty(t, ends[1].nse+" pod", nses[1].Pod.Netns)
	waitFor(t, 100*time.Millisecond, func() bool {
		state, err := topology.Inspect(client.Pod.Netns)
		if err != nil {
			return false
		}
		_, second := state.Link(ends[1].ifname)
		return !second
	}, func() string { return "the client pod still holds " + ends[1].ifname + " after its Close" })
	require.Equal(t, first, linkIdentity(t, client.Pod.Netns, ends[0].ifname), "closing %s changed %s", ends[1].ifname, ends[0].ifname)
	state, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	ipc := client.Connections[0].GetContext().GetIpContext()
	where := "client pod after closing " + ends[1].ifname
	if shared {
		// The main table's route to the shared peer went with the closed interface when that
		// one held it; the first connection's rule and table must be untouched.
		policyTables(t, where, state, ipc.GetPolicies())
	} else {
		requireKernelMatches(t, where, state, ends[0].ifname, ipc.GetSrcIpAddrs(), clientRoutes(ipc), ipc.GetPolicies())
		requireUpstreamPing(ctx, t, client.Pod.Netns, pairs[0][0], pairs[0][1])
		requireUpstreamPing(ctx, t, nses[0].Pod.Netns, pairs[0][1], pairs[0][0])
	}
	for _, check := range checks {
		if check.ifname == ends[0].ifname {
			check.require(ctx, t, client)
		}
	}

	rep.step("close leaves nothing")
	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, ends[0].nse+" pod", nses[0].Pod.Netns)
	requireVPPClean(ctx, t, d, node)
	requireNodeKernelClean(t, node)
	if ourDesign(d) {
		requireJournalEmpty(ctx, t, d, node)
	}
	for _, nse := range nses {
		requireEndpointUnregisters(ctx, t, d, nse)
	}
}

// startServiceEndpoint starts end's endpoint on node, with end's policies file when it has one.
func startServiceEndpoint(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, end serviceEnd) *domain.Endpoint {
	t.Helper()
	var opts []domain.EndpointOption
	if end.policies != "" {
		path := filepath.Join(t.TempDir(), end.nse+"-policies.yaml")
		require.NoError(t, os.WriteFile(path, []byte(end.policies), 0o600))
		opts = append(opts, domain.WithPoliciesFile(path))
	}
	nse, err := d.StartEndpoint(ctx, node, end.nse, end.service, end.cidr, opts...)
	require.NoError(t, err)
	return nse
}

// requireTwoConnections requires the client pod to hold exactly the two connections'
// interfaces, each up with exactly its connection's addresses and the main table exactly the
// routes of both (when the addresses differ; mutually aware connections share them, and the
// last writer holds the shared slot), each endpoint pod its side with its addresses. It
// returns each connection's client and endpoint address.
func requireTwoConnections(t *testing.T, client *domain.Client, nses []*domain.Endpoint, ends [2]serviceEnd) [][2]string {
	t.Helper()
	state, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	var links []string
	for _, l := range state.Links {
		if l.Name != "lo" {
			links = append(links, l.Name)
		}
	}
	require.ElementsMatch(t, []string{ends[0].ifname, ends[1].ifname}, links, "client pod: interfaces\n%s", state)
	var pairs [][2]string
	var wantRoutes []string
	for i, conn := range client.Connections {
		require.Equal(t, ends[i].service, conn.GetNetworkService())
		ifname := ends[i].ifname
		require.Equal(t, ifname, conn.GetMechanism().GetParameters()[common.InterfaceNameKey])
		ipc := conn.GetContext().GetIpContext()
		link, _ := state.Link(ifname)
		require.True(t, link.Up, "client pod: %s is down\n%s", ifname, state)
		require.Equal(t, uniquePrefixes(t, ipc.GetSrcIpAddrs()), uniquePrefixes(t, link.Addrs), "client pod: addresses of %s\n%s", ifname, state)
		for _, r := range clientRoutes(ipc) {
			wantRoutes = append(wantRoutes, r.String(ifname))
		}
		nseState, err := topology.Inspect(nses[i].Pod.Netns)
		require.NoError(t, err)
		nseIfname := onlyNonLoopback(t, ends[i].nse+" pod", nseState)
		nseLink, _ := nseState.Link(nseIfname)
		require.Equal(t, uniquePrefixes(t, ipc.GetDstIpAddrs()), uniquePrefixes(t, nseLink.Addrs), "%s pod: addresses\n%s", ends[i].nse, nseState)
		pairs = append(pairs, [2]string{addrOf(t, ipc.GetSrcIpAddrs()[0]), addrOf(t, ipc.GetDstIpAddrs()[0])})
	}
	if pairs[0][1] != pairs[1][1] {
		var got []string
		for _, r := range state.Routes {
			if r.Table == 254 {
				got = append(got, route{dst: r.Dst, gw: r.Gw}.String(r.Link))
			}
		}
		require.ElementsMatch(t, wantRoutes, got, "client pod: main table\n%s", state)
	}
	return pairs
}

// routeGet is an example's `ip route get` check in the client pod: the route must leave by ifname.
type routeGet struct {
	args   []string
	want   string
	ifname string
}

func (c routeGet) require(ctx context.Context, t *testing.T, client *domain.Client) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", client.Pod.Netns, "ip"}, c.args...)...).CombinedOutput()
	state, _ := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err, "ip %s:\n%s\n%s", strings.Join(c.args, " "), out, state)
	require.Regexp(t, c.want, string(out), "ip %s\n%s", strings.Join(c.args, " "), state)
}

// features/mutually-aware-nses: two services in one awareness group (the client's
// NSM_AWARENESS_GROUPS, requests labelled color=red), two endpoints on the client's node with the
// same 172.16.1.100/31, each with one policy from the client's address to the endpoint's (TCP 6666
// for the first, UDP 5555 for the second). Both connections get the same addresses; upstream's
// `ip route get` checks: TCP 6666 leaves by nsm-1, UDP 5555 by nsm-2, told apart by the policy
// rules alone. Then the second closed: the first's rule and table stay and still route TCP 6666
// by nsm-1; Close leaves nothing.
func TestUpstreamFeaturesMutuallyAwareNSEs(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoServices(t, withReport(upstreamScenario("fmut", 1, realVPP), "upstream features/mutually-aware-nses"), [2]serviceEnd{
			{service: "mutually-aware-nses-1", nse: "nse-kernel-1", cidr: "172.16.1.100/31", ifname: "nsm-1", labels: "color=red",
				policies: "- {from: 172.16.1.101/32, proto: 6, dstport: 6666, routes: [{prefix: 172.16.1.100/32}]}\n"},
			{service: "mutually-aware-nses-2", nse: "nse-kernel-2", cidr: "172.16.1.100/31", ifname: "nsm-2", labels: "color=red",
				policies: "- {from: 172.16.1.101/32, proto: 17, dstport: 5555, routes: [{prefix: 172.16.1.100/32}]}\n"},
		}, [][2]string{{"172.16.1.101", "172.16.1.100"}, {"172.16.1.101", "172.16.1.100"}},
			routeGet{args: strings.Fields("route get 172.16.1.100 from 172.16.1.101 ipproto tcp dport 6666"),
				want: `172\.16\.1\.100 from 172\.16\.1\.101 dev nsm-1`, ifname: "nsm-1"},
			routeGet{args: strings.Fields("route get 172.16.1.100 from 172.16.1.101 ipproto udp dport 5555"),
				want: `172\.16\.1\.100 from 172\.16\.1\.101 dev nsm-2`, ifname: "nsm-2"})
	})
}

// features/change-nse-dynamically: a blue and a green endpoint (labels color:Blue, color:Green;
// 172.16.2.100/31 and 172.16.1.100/31) for one service whose match selects color Blue. Pings
// with blue; the service applied again selecting Green: the client, not restarted, moves to green
// (the nsmgr's service monitor closes the path, the client's heal asks again); pings with green;
// back to Blue; pings with blue. Each time the endpoint left holds nothing and the client pod
// holds what its connection says; Close leaves nothing.
func TestUpstreamFeaturesChangeNseDynamically(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fchg", 1, realVPP), "upstream features/change-nse-dynamically")
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[0]
		const serviceName = "my-network-service"
		selecting := func(color string) *registryapi.NetworkService {
			return &registryapi.NetworkService{Name: serviceName, Payload: "ETHERNET", Matches: []*registryapi.Match{{
				Routes: []*registryapi.Destination{{DestinationSelector: map[string]string{"color": color}}},
			}}}
		}
		serviceFile := filepath.Join(t.TempDir(), "service.json")
		require.NoError(t, domain.WriteServiceFile(serviceFile, selecting("Blue")))
		blue, err := d.StartEndpoint(ctx, node, "blue-nse", serviceName, "172.16.2.100/31",
			domain.WithServiceFile(serviceFile), domain.WithLabels(map[string]string{"color": "Blue"}))
		require.NoError(t, err)
		green, err := d.StartEndpoint(ctx, node, "green-nse", serviceName, "172.16.1.100/31",
			domain.WithoutServiceRegistration(), domain.WithLabels(map[string]string{"color": "Green"}))
		require.NoError(t, err)
		client, err := d.Connect(ctx, node, "alpine", "kernel://"+serviceName+"/"+clientIfname)
		require.NoError(t, err)

		rep.step("connected to blue: pings")
		requireServedBy(ctx, t, client, blue, green, "172.16.2.101", "172.16.2.100")
		for _, step := range []struct {
			color    string
			to, from *domain.Endpoint
			addrs    [2]string
		}{
			{"Green", green, blue, [2]string{"172.16.1.101", "172.16.1.100"}},
			{"Blue", blue, green, [2]string{"172.16.2.101", "172.16.2.100"}},
		} {
			rep.step("service selects " + step.color + ": the client moves, pings")
			applied := time.Now()
			require.NoError(t, blue.ApplyService(ctx, serviceFile, selecting(step.color)))
			waitFor(t, 200*time.Millisecond, func() bool {
				return client.ReloadConnections() == nil && len(client.Connections) == 1 &&
					client.Connections[0].GetNetworkServiceEndpointName() == step.to.Name
			}, func() string {
				return fmt.Sprintf("the client is not served by %s after the service selected %s:\n%s", step.to.Name, step.color, client.Proc.LogTail(20))
			})
			t.Logf("the client was served by %s %s after the service selected %s", step.to.Name, time.Since(applied).Round(100*time.Millisecond), step.color)
			requireServedBy(ctx, t, client, step.to, step.from, step.addrs[0], step.addrs[1])
		}

		rep.step("close leaves nothing")
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
		requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
		requireEventuallyEmpty(t, "blue-nse pod", blue.Pod.Netns)
		requireEventuallyEmpty(t, "green-nse pod", green.Pod.Netns)
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, node)
		}
		requireEndpointUnregisters(ctx, t, d, green)
		requireEndpointUnregisters(ctx, t, d, blue)
	})
}

// requireServedBy requires the client's connection to end at nse with clientAddr and nseAddr,
// the client pod to hold nsm-1 with exactly the connection's addresses, nse's pod its side, the
// other endpoint's pod nothing (once its path is released), and upstream's pings both ways.
func requireServedBy(ctx context.Context, t *testing.T, client *domain.Client, nse, other *domain.Endpoint, clientAddr, nseAddr string) {
	t.Helper()
	require.NoError(t, client.ReloadConnections())
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]
	require.Equal(t, nse.Name, conn.GetNetworkServiceEndpointName())
	ipc := conn.GetContext().GetIpContext()
	require.Contains(t, normalizePrefixes(t, ipc.GetSrcIpAddrs()), clientAddr+"/32", "the client's addresses")
	require.Contains(t, normalizePrefixes(t, ipc.GetDstIpAddrs()), nseAddr+"/32", "the endpoint's addresses")
	requireEventuallyEmpty(t, other.Name+" pod", other.Pod.Netns)
	waitFor(t, 100*time.Millisecond, func() bool {
		state, err := topology.Inspect(client.Pod.Netns)
		if err != nil {
			return false
		}
		link, ok := state.Link(clientIfname)
		return ok && link.Up && equalStrings(uniquePrefixes(t, ipc.GetSrcIpAddrs()), uniquePrefixes(t, link.Addrs))
	}, func() string {
		state, _ := topology.Inspect(client.Pod.Netns)
		return fmt.Sprintf("client pod: %s does not hold the connection's addresses %v\n%s", clientIfname, ipc.GetSrcIpAddrs(), state)
	})
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
}

// features/ipv6/Kernel2IP2Kernel_ipv6 and features/dual-stack/Kernel2IP2Kernel_dual_stack: client
// on node 1, endpoint on node 2, a service of IP payload (so the forwarders choose wireguard,
// difference 6 of docs/upstream-examples.md), the endpoint handing out 2001:db8::/116, or that
// and 172.16.1.100/31; both VPPs hold a wireguard tunnel; upstream's pings both ways in each
// family; Close leaves nothing. Real VPP only: the simulator carries nothing over wireguard.
func TestUpstreamFeaturesKernel2IP2KernelFamilies(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	for _, example := range []struct{ name, tag, cidr string }{
		{"ipv6", "fip6", "2001:db8::/116"},
		{"dual_stack", "fipd", "172.16.1.100/31,2001:db8::/116"},
	} {
		t.Run(example.name, func(t *testing.T) {
			onEachVPP(t, func(t *testing.T, realVPP string) {
				if realVPP == "" {
					t.Skip(noTrafficOnSimulator)
				}
				if skipReason != "" {
					t.Skip(skipReason)
				}
				sc := scenario{tag: example.tag, kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, realVPP: realVPP, cidr: example.cidr,
					report: "upstream features/" + example.name + "/Kernel2IP2Kernel"}
				ctx, d, rep := startScenario(t, sc, shortScenarioTime)
				nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse-kernel", service, sc.cidr, domain.WithPayload("IP"))
				require.NoError(t, err)
				client := connectClient(ctx, t, d, sc)
				rep.step("connected over wireguard: pings in each family")
				for _, node := range d.Nodes {
					requireVPPHolds(ctx, t, d, node, "wireguard")
				}
				view := requireConnected(ctx, t, d, sc, client, nse)
				families := 0
				for _, src := range view.ipContext.GetSrcIpAddrs() {
					for _, dst := range view.ipContext.GetDstIpAddrs() {
						from, to := addrOf(t, src), addrOf(t, dst)
						if strings.Contains(from, ":") != strings.Contains(to, ":") {
							continue
						}
						families++
						requireUpstreamPing(ctx, t, client.Pod.Netns, from, to)
						requireUpstreamPing(ctx, t, nse.Pod.Netns, to, from)
					}
				}
				require.Equal(t, len(strings.Split(sc.cidr, ",")), families, "address pairs of one family: %v", view.ipContext)
				rep.step("close leaves nothing")
				requireCloseLeavesNothing(ctx, t, d, client, nse)
			})
		})
	}
}

// features/nse-composition, on kernel hops: client → firewall → passthrough-1 → passthrough-2
// → passthrough-3 → nse-kernel (172.16.1.100/31), every endpoint on the client's node, so one
// forwarder carries all five hops. Upstream's endpoints are VPP endpoints over memif and its
// firewall an ACL (TCP 80 denied, 8080 allowed); here each is a pass-through endpoint crossing
// its two kernel interfaces at layer 2 (e2e-nse's NSM_PASS_THROUGH_TO), and there is no ACL.
// Upstream's pings both ways through the chain; each pass-through pod holds exactly its two
// hops; Close leaves nothing in any pod, the node, VPP or the journal.
func TestUpstreamFeaturesNseComposition(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fcmp", 1, realVPP), "upstream features/nse-composition (kernel hops)")
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[0]
		nse, err := d.StartEndpoint(ctx, node, "nse-kernel", "composition-gateway", "172.16.1.100/31")
		require.NoError(t, err)
		hops := []string{"firewall", "passthrough-1", "passthrough-2", "passthrough-3"}
		onward := "composition-gateway"
		passThroughs := make([]*domain.Endpoint, len(hops))
		for i := len(hops) - 1; i >= 0; i-- {
			serviceName := "composition-" + hops[i]
			if i == 0 {
				serviceName = "nse-composition"
			}
			// A pass-through's own range is never handed out; each gets one apart.
			passThroughs[i], err = d.StartEndpoint(ctx, node, hops[i], serviceName, fmt.Sprintf("169.254.%d.0/30", 200+i), domain.WithPassThroughTo(onward))
			require.NoError(t, err)
			onward = serviceName
		}
		client, err := d.Connect(ctx, node, "alpine", "kernel://nse-composition/"+clientIfname)
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)

		rep.step("composed: each pod its hops, pings through the chain")
		names := pathNames(client.Connections[0])
		var endpoints []string
		for _, name := range names {
			if slices.Contains(hops, name) || name == nse.Name {
				endpoints = append(endpoints, name)
			}
		}
		require.Equal(t, append(slices.Clone(hops), nse.Name), endpoints, "the endpoints on the client's path, in order: %v", names)
		for i, pt := range passThroughs {
			state, err := topology.Inspect(pt.Pod.Netns)
			require.NoError(t, err)
			var links []string
			for _, l := range state.Links {
				if l.Name != "lo" {
					links = append(links, l.Name)
					require.True(t, l.Up, "%s pod: %s is down\n%s", hops[i], l.Name, state)
				}
			}
			require.Len(t, links, 2, "%s pod should hold exactly its two hops\n%s", hops[i], state)
		}
		requireUpstreamPing(ctx, t, client.Pod.Netns, "172.16.1.101", "172.16.1.100")
		requireUpstreamPing(ctx, t, nse.Pod.Netns, "172.16.1.100", "172.16.1.101")

		rep.step("close leaves nothing")
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
		requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
		for i, pt := range passThroughs {
			requireEventuallyEmpty(t, hops[i]+" pod", pt.Pod.Netns)
		}
		requireEventuallyEmpty(t, "nse-kernel pod", nse.Pod.Netns)
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, node)
		}
		for _, pt := range passThroughs {
			requireEndpointUnregisters(ctx, t, d, pt)
		}
		requireEndpointUnregisters(ctx, t, d, nse)
	})
}
