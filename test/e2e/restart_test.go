package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
)

// crashPolicies are the endpoint's policy routes in the crash scenarios
// (e2e-nse's NSM_POLICY_ROUTES): three policies per client, so that a restart
// recovers several rules and tables in one namespace (field report 3): all
// traffic from the client's address to policyPrefix, TCP to port 5201 and
// UDP to port 53 to halves of TEST-NET-1, each looked up in a table of its
// own.
var crashPolicies = []string{policyPrefix, "192.0.2.0/25@6:5201", "192.0.2.128/25@17:53"}

const (
	// policyPrefix is reached from the client's address through a policy
	// route (TEST-NET-2: nothing is ever sent there).
	policyPrefix = "198.51.100.0/24"
	// healTimeout bounds how long the client takes to be granted its
	// connection again through a restarted forwarder.
	healTimeout = 30 * time.Second
	// expiryLifetime is the token lifetime of the killed-client scenario, and
	// expiryMargin how long after it the connection's resources may linger.
	expiryLifetime = 30 * time.Second
	expiryMargin   = 15 * time.Second
	// crashRequestTimeout is the client's NSM_REQUEST_TIMEOUT in these
	// scenarios. It stays well below expiryLifetime: sdk's timeout element
	// closes a connection at its expiry minus the Request's deadline. It also
	// bounds a heal attempt that waits on a dead peer; none does since the
	// forwarder and the harness's nsmgr dial blocking within their dial
	// timeouts (docs/e2e.md, "Where the heal time goes").
	crashRequestTimeout = 10 * time.Second
	// shortScenarioTime bounds the crash scenarios.
	shortScenarioTime = 2 * time.Minute
)

// The forwarder is SIGKILLed while a client with several policy routes is
// connected over taps, and started again with the same environment; VPP
// (external to the forwarder) and the kernel keep what the dead run made.
// Simulator only: VPP's taps need /dev/vhost-net.
func TestForwarderRestartOverTap(t *testing.T) {
	runForwarderRestart(t, restartScenario{scenario: scenario{report: "forwarder restart, tap", tag: "rtap", kernelType: "tap", linkType: "tuntap", nodes: 1, requestTimeout: crashRequestTimeout}})
}

// As TestForwarderRestartOverTap, over veth pairs whose node-side ends VPP
// drives as af-packet interfaces; on the simulator and on real VPP.
func TestForwarderRestartOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{report: "forwarder restart, veth", tag: "rveth", kernelType: "veth", linkType: "veth", nodes: 1, requestTimeout: crashRequestTimeout, realVPP: realVPP}})
	})
}

// Client on node1, endpoint on node2, VXLAN between them: both nodes'
// forwarders are SIGKILLed and started again; on the simulator and on real
// VPP.
func TestForwarderRestartOverVxlan(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{tag: "rvx", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, requestTimeout: crashRequestTimeout, realVPP: realVPP}})
	})
}

// The stock layout, where the forwarder's VPP goes down with it: the
// forwarder and VPP are SIGKILLed, and both come back, VPP empty. Simulator
// only: VPP's taps need /dev/vhost-net.
func TestForwarderAndVPPRestartOverTap(t *testing.T) {
	runForwarderRestart(t, restartScenario{vppToo: true, scenario: scenario{tag: "rvtap", kernelType: "tap", linkType: "tuntap", nodes: 1, requestTimeout: crashRequestTimeout}})
}

// As TestForwarderAndVPPRestartOverTap over veth pairs, which the kernel
// keeps when VPP dies; on the simulator and on real VPP.
func TestForwarderAndVPPRestartOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{vppToo: true, scenario: scenario{tag: "rvveth", kernelType: "veth", linkType: "veth", nodes: 1, requestTimeout: crashRequestTimeout, realVPP: realVPP}})
	})
}

// The forwarder's pod is replaced (a new NSM_NAME on the same node and state
// directory) while its client is SIGKILLed: the new forwarder finds the dead
// one's journal and releases the dead client's rules, routes and interfaces
// once the token lifetime has passed.
func TestReplacedForwarderReleasesWhatADeadClientLeft(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{tag: "repl", kernelType: "tap", linkType: "tuntap", nodes: 1, tokenLifetime: expiryLifetime, requestTimeout: crashRequestTimeout}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	node := d.Nodes[0]
	nse, err := d.StartEndpoint(ctx, node, "nse", service, endpointCIDR, domain.WithPolicyRoutes(crashPolicies...))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requirePolicies(t, client)
	requireConnected(ctx, t, d, sc, client, nse)

	client.Kill()
	killedAt := time.Now()
	require.NoError(t, d.ReplaceForwarder(ctx, node, node.ForwarderName+"-replacement"))
	var state *topology.State
	waitUntil(t, killedAt.Add(expiryLifetime+expiryMargin), 250*time.Millisecond, func() bool {
		state, err = topology.Inspect(client.Pod.Netns)
		return err == nil && isPristine(state)
	}, func() string {
		return fmt.Sprintf("%s after the client and the forwarder were SIGKILLed and the forwarder came back as %s, the client's pod still holds NSM state (%v):\n%s\nforwarder log:\n%s",
			time.Since(killedAt).Round(time.Second), node.ForwarderName, err, state, node.Forwarder.LogTail(30))
	})
	t.Logf("the dead client's pod was clean %s after the kills", time.Since(killedAt).Round(100*time.Millisecond))
	requireIdle(ctx, t, d, client, nse)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// The client is SIGKILLed (no Close) and its pod stays: once its tokens run
// out, the nsmgr's timeout closes the connection, and everything NSM made for
// it must go.
func TestKilledClientConnectionExpires(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runKilledClient(t, "client SIGKILL, connection expires", "oom", false, realVPP)
	})
}

// As TestKilledClientConnectionExpires, but the node's nsmgr is SIGKILLed
// too, so no Close can reach the forwarder: it must release the expired
// connection's data plane on its own. The nsmgr comes back afterwards so that
// the endpoint and the forwarder can unregister.
func TestKilledClientAndNsmgrConnectionExpires(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runKilledClient(t, "client and nsmgr SIGKILL, connection expires", "oomx", true, realVPP)
	})
}

// killedClientScenario is the killed-client scenarios' domain: over taps on
// the simulator, over veth pairs on real VPP, whose taps need /dev/vhost-net
// (these machines have none). The kernel interface is incidental to them.
func killedClientScenario(tag, realVPP string) scenario {
	sc := scenario{tag: tag, kernelType: "tap", linkType: "tuntap", nodes: 1, tokenLifetime: expiryLifetime, requestTimeout: crashRequestTimeout, realVPP: realVPP}
	if realVPP != "" {
		sc.kernelType, sc.linkType = "veth", "veth"
	}
	return sc
}

func runKilledClient(t *testing.T, report, tag string, killNsmgr bool, realVPP string) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := killedClientScenario(tag, realVPP)
	sc.report = report
	ctx, d, rep := startScenario(t, sc, shortScenarioTime)
	node := d.Nodes[0]
	nse, err := d.StartEndpoint(ctx, node, "nse", service, endpointCIDR, domain.WithPolicyRoutes(crashPolicies...))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requirePolicies(t, client)
	rep.step("connected: kernel state, ping")
	requireConnected(ctx, t, d, sc, client, nse)

	rep.step("expiry: client pod released")
	client.Kill()
	killedAt := time.Now()
	if killNsmgr {
		node.Nsmgr.Kill()
	}
	var state *topology.State
	waitUntil(t, killedAt.Add(expiryLifetime+expiryMargin), 250*time.Millisecond, func() bool {
		state, err = topology.Inspect(client.Pod.Netns)
		return err == nil && isPristine(state)
	}, func() string {
		return fmt.Sprintf("%s after the client was SIGKILLed with a token lifetime of %s (nsmgr killed too: %t), its pod still holds NSM state (%v):\n%s\nforwarder log:\n%s",
			time.Since(killedAt).Round(time.Second), expiryLifetime, killNsmgr, err, state, node.Forwarder.LogTail(30))
	})
	rep.recovered(time.Since(killedAt))
	t.Logf("the killed client's pod was clean %s after the kill", time.Since(killedAt).Round(100*time.Millisecond))
	rep.step("expiry: endpoint pod, node and VPP idle")
	requireIdle(ctx, t, d, client, nse)
	if killNsmgr {
		rep.step("nsmgr respawn")
		require.NoError(t, d.RespawnNsmgr(ctx, node))
	}
	rep.step("endpoint unregisters")
	requireEndpointUnregisters(ctx, t, d, nse)
}

// restartScenario is a scenario whose forwarders are SIGKILLed and started
// again under a connection; with vppToo their VPPs die and come back too.
type restartScenario struct {
	scenario
	vppToo bool
}

// pingInterval paces the ping that runs across a restart: 20 per second.
const pingInterval = 50 * time.Millisecond

// runForwarderRestart connects a client with a policy route, then restarts
// every node's forwarder (and VPP) under it while a ping runs from the client
// to the endpoint. It reports what the ping lost and when the client was
// granted its connection again. With an external VPP that survives, nothing
// may be lost and neither pod may see its interface replaced or an address,
// route or rule written; when VPP restarts too, everything is rebuilt and
// nothing of the dead run may be left. Either way the pods end up exactly as
// the connection says, and Close leaves nothing.
func runForwarderRestart(t *testing.T, rs restartScenario) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := rs.scenario
	ctx, d, nse, client, before := connectWithPolicy(t, sc)
	rep := reportOf(t)
	connected := map[string][]domain.SimInterface{}
	for _, node := range d.Nodes {
		var err error
		connected[node.Name], err = d.SimulatorInterfaces(ctx, node)
		require.NoError(t, err)
	}
	clientLink, nseLink := linkIdentity(t, client.Pod.Netns, clientIfname), linkIdentity(t, nse.Pod.Netns, before.nseIfname)
	nodeVeths := vethCounts(t, d)

	for _, pod := range []string{client.Pod.Netns, nse.Pod.Netns} {
		require.NoError(t, topology.WaitAddressesSettled(pod, 10*time.Second))
	}
	clientWatch, nseWatch := watchPod(t, client.Pod.Netns), watchPod(t, nse.Pod.Netns)
	ping, err := topology.StartPing(client.Pod.Netns, clientIfname, addrOf(t, before.ipContext.GetDstIpAddrs()[0]), pingInterval)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ping.Stop() })
	time.Sleep(time.Second) // replies before the crash show the ping works

	rep.step("restart")
	restartedAt := time.Now()
	for _, node := range d.Nodes {
		if rs.vppToo {
			node.Forwarder.Kill()
			require.NoError(t, d.RestartVPP(ctx, node))
		}
		require.NoError(t, d.RestartForwarder(ctx, node))
	}
	ready := time.Since(restartedAt)
	rep.step("heal: client granted again")
	heal := requireHealed(t, restartedAt, client)
	rep.recovered(heal)
	time.Sleep(time.Second) // what the heal changes shows in the ping and the watches
	result, err := ping.Stop()
	require.NoError(t, err)
	clientEvents, err := clientWatch.Stop()
	require.NoError(t, err)
	nseEvents, err := nseWatch.Stop()
	require.NoError(t, err)
	layout := "external VPP kept"
	if rs.vppToo {
		layout = "VPP restarted too"
	}
	t.Logf("RESTART %s (%s, %s): forwarders ready %s after the SIGKILL, client granted again after %s; ping every %s: %s; "+
		"client pod: %d link changes, %d address/route/rule writes; endpoint pod: %d link changes, %d writes",
		t.Name(), sc.kernelType, layout, ready.Round(100*time.Millisecond), heal.Round(100*time.Millisecond), pingInterval, result,
		len(netwatch.LinkChanges(clientEvents, "")), len(netwatch.Writes(clientEvents)),
		len(netwatch.LinkChanges(nseEvents, "")), len(netwatch.Writes(nseEvents)))
	what := "forwarder SIGKILL and restart (" + sc.kernelType + ")"
	if rs.vppToo {
		what = "forwarder and VPP SIGKILL and restart (" + sc.kernelType + ")"
	}
	logHealFigure(t, what, heal, fmt.Sprintf("the new forwarders were ready %s after the kill", ready.Round(100*time.Millisecond)))

	rep.step("healed: kernel state, ping")
	after := requireConnected(ctx, t, d, sc, client, nse)
	if ourDesign(d) {
		require.Equal(t, before.clientState.Rules, after.clientState.Rules,
			"the client's policy rules changed across the forwarder's restart\nbefore:\n%s\nafter:\n%s", before.clientState, after.clientState)
	}
	if ourDesign(d) {
		// What a later crash releases is what the journal names: after a rebuild it must name the
		// new interfaces, not the dead run's.
		rep.step("healed: the journal names what the pods hold")
		for _, node := range d.Nodes {
			for _, c := range inspectJSON(ctx, t, d, node).Connections {
				require.Empty(t, c.Problems, "inspect on %s after the heal, connection %s", node.Name, c.ID)
			}
		}
	}
	rep.step("healed: no dead run's interface in VPP")
	for _, node := range d.Nodes {
		requireSimulatorKinds(ctx, t, d, node, connected[node.Name])
	}
	require.Equal(t, nodeVeths, vethCounts(t, d), "veth ends of the dead run left in a node's namespace, or missing")
	if ourDesign(d) && !rs.vppToo {
		// Field report 3's invariant: a restart with intact state deletes and writes nothing, so
		// traffic never stops or falls through to the main table.
		rep.step("restart next to a running VPP: nothing lost, nothing rewritten")
		require.Zero(t, result.Lost(), "the data path dropped packets across a forwarder restart next to a VPP that kept running: %s", result)
		require.Equal(t, clientLink, linkIdentity(t, client.Pod.Netns, clientIfname), "the client's interface was replaced: %v", clientEvents)
		require.Equal(t, nseLink, linkIdentity(t, nse.Pod.Netns, after.nseIfname), "the endpoint's interface was replaced: %v", nseEvents)
		require.Empty(t, netwatch.LinkChanges(clientEvents, ""), "links added or deleted in the client's pod")
		require.Empty(t, netwatch.LinkChanges(nseEvents, ""), "links added or deleted in the endpoint's pod")
		require.Empty(t, netwatch.Writes(clientEvents), "addresses, routes or rules written in the client's pod")
		require.Empty(t, netwatch.Writes(nseEvents), "addresses, routes or rules written in the endpoint's pod")
	}
	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// linkIdentity is what survives of a pod's interface only when nothing
// deleted and re-created it: its ifindex and MAC.
func linkIdentity(t *testing.T, netnsName, name string) string {
	t.Helper()
	ns, err := netns.GetFromName(netnsName)
	require.NoError(t, err)
	defer func() { _ = ns.Close() }()
	handle, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	defer handle.Close()
	link, err := handle.LinkByName(name)
	require.NoError(t, err, "no %s in %s", name, netnsName)
	return fmt.Sprintf("%s ifindex %d mac %s", name, link.Attrs().Index, link.Attrs().HardwareAddr)
}

// vethCounts counts the veth ends in each node's namespace.
func vethCounts(t *testing.T, d *domain.Domain) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, node := range d.Nodes {
		state, err := topology.Inspect(node.Netns)
		require.NoError(t, err)
		for _, link := range state.Links {
			if link.Type == "veth" {
				counts[node.Name]++
			}
		}
	}
	return counts
}

func watchPod(t *testing.T, netnsName string) *netwatch.Watch {
	t.Helper()
	w, err := netwatch.Start("/var/run/netns/" + netnsName)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = w.Stop() })
	return w
}

// requirePolicies requires the endpoint to have given the client's
// connection one policy route per crashPolicies selector, so that the
// scenario exercises several ip rules and tables in one namespace.
func requirePolicies(t *testing.T, client *domain.Client) {
	t.Helper()
	policies := client.Connections[0].GetContext().GetIpContext().GetPolicies()
	require.Len(t, policies, len(crashPolicies), "the endpoint should give one policy per NSM_POLICY_ROUTES selector: %v", policies)
}

// requireGrantedAgainAfter waits until the client has rewritten its
// connections after since: a refresh or heal went through the whole path.
func requireGrantedAgainAfter(t *testing.T, client *domain.Client, since time.Time) {
	t.Helper()
	var written time.Time
	var err error
	waitUntil(t, since.Add(healTimeout), 250*time.Millisecond, func() bool {
		written, err = client.ConnectionsWritten()
		return err == nil && written.After(since)
	}, func() string {
		return fmt.Sprintf("the client was not granted its connection again within %s of the forwarder's restart (last written %s, %v):\n%s",
			healTimeout, written.Format(time.RFC3339Nano), err, client.Proc.LogTail(20))
	})
}

// requireSimulatorKinds waits until node's simulator holds interfaces of the
// same kinds, as many of each, as want: a healed connection must not leave
// the dead run's interfaces next to the new run's.
func requireSimulatorKinds(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, want []domain.SimInterface) {
	t.Helper()
	var now []domain.SimInterface
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		now, err = d.SimulatorInterfaces(ctx, node)
		return err == nil && kindCounts(now) == kindCounts(want)
	}, func() string {
		return fmt.Sprintf("%s: simulator interfaces after the forwarder's restart %v (%s, error %v); with the one connection before it %v (%s)",
			node.Name, now, kindCounts(now), err, want, kindCounts(want))
	})
}

// kindCounts renders how many interfaces of each kind there are, e.g.
// "af_packet=1 tap=2".
func kindCounts(interfaces []domain.SimInterface) string {
	counts := map[string]int{}
	for _, i := range interfaces {
		counts[i.Kind]++
	}
	parts := make([]string, 0, len(counts))
	for kind, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", kind, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
