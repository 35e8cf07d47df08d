package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// The heal examples of NSM's deployments-k8s v1.18.0 that the scenarios of upstream_test.go do
// not cover (issue 24, docs/upstream-examples.md), one table row each: the example's topology,
// then its deaths and restarts in its order, then its checks. Each run connects a client to an
// endpoint like apps/nse-kernel-pbr (apps/nse-kernel for the "-ip" examples), requires the
// example's first checks (4 pings each way; the five policy checks where the endpoint has
// policies), runs the steps, waits for the client's heal where a component on its path died,
// requires the same checks again and ends with Close leaving nothing.
//
// Differences from upstream (docs/upstream-examples.md): pod deletion is SIGTERM and a new
// process (a forwarder under a new name, as its DaemonSet's new pod); the registry comes back
// empty; the nodes' VPPs are external and stay.

// healExample is one example of examples/heal.
type healExample struct {
	// name is the example's folder under examples/heal, and the subtest's name.
	name string
	// tag names the run's namespaces (h-up's prefix: u).
	tag string
	// nodes: 1 puts the client and the endpoint on one node; 2 the client on the first, the
	// endpoint on the second.
	nodes int
	// ip is an "-ip" example: the service's payload is IP, the endpoint has no policies, and the
	// forwarders choose wireguard between the nodes (difference 6); real VPP only.
	ip bool
	// steps are the example's deaths and restarts, in its order.
	steps []healStep
	// heals: a component on the client's path dies, so the client must be granted its
	// connection again before the checks; otherwise the connection just has to keep working.
	heals bool
	// after are the example's steps after its checks (a component brought back).
	after []healStep
	// tokenLifetime is every program's NSM_MAX_TOKEN_LIFETIME; zero keeps the default (10m).
	tokenLifetime time.Duration
	// newRequest adds a check upstream does not make: once the steps are done, a second
	// client connects, pings both ways and closes. The endpoint's range is then a /30 in place
	// of upstream's /31, room for the second client; the first gets the same addresses.
	newRequest bool
	// fast runs in `make test`; the others run with E2E_UPSTREAM_SLOW=1 (make upstream-slow).
	fast bool
}

// healStep is one of an example's deaths and restarts.
type healStep struct {
	what string
	do   func(ctx context.Context, t *testing.T, r *healRun)
}

// healRun is one running example.
type healRun struct {
	ex     healExample
	sc     scenario
	d      *domain.Domain
	nse    *domain.Endpoint
	client *domain.Client
	// cidr is the current endpoint's NSM_CIDR_PREFIX.
	cidr string
	// policySrc is the address the third and fourth policy checks expect; empty is the client's
	// address from cidr.
	policySrc string
	// expiring are endpoints whose records only their expiry removes.
	expiring []string
}

// roomForTwoClientsCIDR is upstreamCIDR with room for a second client.
const roomForTwoClientsCIDR = "172.16.1.100/30"

// healExamples are the rows, in the order of examples/heal.
var healExamples = []healExample{
	{name: "local-forwarder-remote-forwarder", tag: "ulfrf", nodes: 2, heals: true,
		steps: []healStep{deleteForwarderPod(0), deleteForwarderPod(1)}},
	{name: "local-nsm-system-restart", tag: "ulsys", nodes: 1, heals: true, fast: true,
		steps: []healStep{restartNSMSystem()}},
	{name: "local-nsmgr-remote-nsmgr", tag: "ulrmgr", nodes: 2, heals: true,
		steps: []healStep{deleteNsmgrPod(0), deleteNsmgrPod(1)}},
	{name: "registry-local-endpoint", tag: "urle", nodes: 1, heals: true,
		steps: []healStep{deleteRegistryPod(), replaceEndpoint(0)}},
	{name: "registry-remote-forwarder", tag: "urrf", nodes: 2, heals: true,
		steps: []healStep{deleteRegistryPod(), deleteForwarderPod(1)}},
	{name: "registry-remote-nsmgr", tag: "urrm", nodes: 2, heals: true,
		steps: []healStep{deleteRegistryPod(), deleteNsmgrPod(1)}},
	{name: "remote-forwarder-death-ip", tag: "urfip", nodes: 2, ip: true, heals: true,
		steps: []healStep{deleteForwarderPod(1)}},
	{name: "remote-nse-death-ip", tag: "urnip", nodes: 2, ip: true, heals: true,
		steps: []healStep{replaceEndpoint(1)}},
	{name: "remote-nse-death", tag: "urnse", nodes: 2, heals: true,
		steps: []healStep{replaceEndpoint(1)}},
	// Node 2's forwarder cannot be told to close its side of the old path (its nsmgr is gone): it
	// releases it when the connection expires, so the tokens live one minute here.
	{name: "remote-nsmgr-death", tag: "urmd", nodes: 2, heals: true, tokenLifetime: time.Minute,
		steps: []healStep{stopNsmgrForGood(1), moveEndpointFromNsmgrlessNode(0)},
		after: []healStep{restoreNsmgr(1)}},
	{name: "remote-nsmgr-remote-endpoint", tag: "urmre", nodes: 2, heals: true,
		steps: []healStep{deleteNsmgrPod(1), replaceEndpoint(1)}},
	{name: "remote-nsmgr-restart-ip", tag: "urmip", nodes: 2, ip: true, heals: true,
		steps: []healStep{deleteNsmgrPod(1)}},
	{name: "remote-nsmgr-restart", tag: "urmgr", nodes: 2, heals: true,
		steps: []healStep{deleteNsmgrPod(1)}},
	{name: "spire-agent-restart", tag: "uspa", nodes: 2, newRequest: true,
		steps: []healStep{restartSPIREAgents()}},
	{name: "spire-server-agent-restart", tag: "uspsa", nodes: 2, newRequest: true, fast: true,
		steps: []healStep{restartSPIREServer(), restartSPIREAgents()}},
	{name: "spire-server-restart", tag: "usps", nodes: 2, newRequest: true,
		steps: []healStep{restartSPIREServer()}},
	{name: "spire-upgrade", tag: "uspu", nodes: 2, newRequest: true,
		steps: []healStep{reinstallSPIRE()}},
}

// TestUpstreamHealExamples runs every row of healExamples as a subtest named after the
// example, on the simulator and on real VPP.
func TestUpstreamHealExamples(t *testing.T) {
	for _, ex := range healExamples {
		t.Run(ex.name, func(t *testing.T) {
			if !ex.fast && os.Getenv("E2E_UPSTREAM_SLOW") == "" {
				t.Skip("issue 24: beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
			}
			onEachVPP(t, func(t *testing.T, realVPP string) {
				runHealExample(t, ex, realVPP)
			})
		})
	}
}

func runHealExample(t *testing.T, ex healExample, realVPP string) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if ex.ip && realVPP == "" {
		t.Skip(noTrafficOnSimulator)
	}
	sc := upstreamScenario(ex.tag, ex.nodes, realVPP)
	sc.report = "heal/" + ex.name
	sc.tokenLifetime = ex.tokenLifetime
	if ex.ip {
		sc.overVxlan = false
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	r := &healRun{ex: ex, sc: sc, d: startDomain(ctx, t, sc), cidr: upstreamCIDR}
	if ex.newRequest {
		r.cidr = roomForTwoClientsCIDR
	}
	rep := reportOf(t)
	rep.step("connect: pings both ways, policy checks")
	r.nse = r.startEndpoint(ctx, t, r.d.Nodes[sc.endpointNode], "nse-kernel", r.cidr)
	r.client = connectClient(ctx, t, r.d, sc)
	r.requireConnected(ctx, t)

	since := time.Now()
	for _, step := range ex.steps {
		rep.step(step.what)
		t.Logf("step: %s", step.what)
		step.do(ctx, t, r)
	}
	if ex.heals {
		rep.step("the client heals")
		healed := r.requireHealedOnto(t, since)
		t.Logf("the client was granted its connection again %s after the first step", healed.Round(100*time.Millisecond))
		rep.recovered(healed)
	}
	rep.step("after the steps: pings both ways, policy checks")
	r.requireConnected(ctx, t)
	if ex.newRequest {
		rep.step("a new client connects and pings")
		r.requireNewClientWorks(ctx, t)
	}
	for _, step := range ex.after {
		rep.step(step.what)
		t.Logf("step: %s", step.what)
		step.do(ctx, t, r)
	}
	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, r.d, r.client, r.nse)
}

// startEndpoint starts the example's endpoint: apps/nse-kernel-pbr, or apps/nse-kernel with
// payload IP for an "-ip" example.
func (r *healRun) startEndpoint(ctx context.Context, t *testing.T, node *domain.Node, name, cidr string) *domain.Endpoint {
	t.Helper()
	if !r.ex.ip {
		return startUpstreamEndpoint(ctx, t, r.d, node, name, cidr)
	}
	nse, err := r.d.StartEndpoint(ctx, node, name, service, cidr, domain.WithPayload("IP"))
	require.NoError(t, err)
	return nse
}

// requireConnected requires the example's checks: for an "-ip" example a wireguard tunnel in
// both VPPs and 4 pings each way, otherwise what requireUpstreamConnected checks.
func (r *healRun) requireConnected(ctx context.Context, t *testing.T) {
	t.Helper()
	if !r.ex.ip {
		requireUpstreamConnected(ctx, t, r.d, r.sc, r.client, r.nse, r.cidr, r.policySrc)
		return
	}
	for _, node := range r.d.Nodes {
		requireVPPHolds(ctx, t, r.d, node, "wireguard")
	}
	clientAddr, nseAddr := upstreamAddrs(t, r.client, r.cidr)
	requireUpstreamPing(ctx, t, r.client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, r.nse.Pod.Netns, nseAddr, clientAddr)
}

// requireHealedOnto waits until the client has been granted its connection again after since,
// with an address from the current endpoint's range, and returns how long after since.
func (r *healRun) requireHealedOnto(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	prefix := netip.MustParsePrefix(r.cidr)
	var healed time.Duration
	waitUntil(t, since.Add(2*healTimeout), 250*time.Millisecond, func() bool {
		written, err := r.client.ConnectionsWritten()
		if err != nil || !written.After(since) || r.client.ReloadConnections() != nil || len(r.client.Connections) != 1 {
			return false
		}
		healed = written.Sub(since)
		for _, a := range r.client.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs() {
			if p, err := netip.ParsePrefix(a); err == nil && prefix.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("the client was not granted a connection to the endpoint of %s within %s:\n%s", r.cidr, 2*healTimeout, r.client.Proc.LogTail(30))
	})
	return healed
}

// requireNewClientWorks connects a second client on the client's node, pings both ways between
// it and the endpoint, closes it and requires its pod to be empty.
func (r *healRun) requireNewClientWorks(ctx context.Context, t *testing.T) {
	t.Helper()
	started := time.Now()
	client, err := r.d.Connect(ctx, r.d.Nodes[r.sc.clientNode], "nsc-new", fmt.Sprintf("kernel://%s/%s", service, clientIfname))
	require.NoError(t, err, "a new client after the steps")
	t.Logf("a new client was granted its connection %s after it started", time.Since(started).Round(100*time.Millisecond))
	clientAddr, nseAddr := upstreamAddrs(t, client, r.cidr)
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, r.nse.Pod.Netns, nseAddr, clientAddr)
	require.NoError(t, client.Close(), "the new client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod "+client.Name, client.Pod.Netns)
}

// deleteForwarderPod deletes the forwarder pod of a node: SIGTERM, then a forwarder under a new
// name (Domain.DeleteForwarderPod).
func deleteForwarderPod(node int) healStep {
	return healStep{fmt.Sprintf("node %d's forwarder pod deleted", node+1), func(ctx context.Context, t *testing.T, r *healRun) {
		n := r.d.Nodes[node]
		require.NoError(t, r.d.DeleteForwarderPod(ctx, n, n.ForwarderName+"-new"))
	}}
}

// deleteNsmgrPod deletes the nsmgr pod of a node: SIGTERM, then the nsmgr again.
func deleteNsmgrPod(node int) healStep {
	return healStep{fmt.Sprintf("node %d's nsmgr pod deleted", node+1), func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.DeleteNsmgrPod(ctx, r.d.Nodes[node]))
	}}
}

// deleteRegistryPod deletes the registry's pod: SIGTERM, then the registry again, empty.
func deleteRegistryPod() healStep {
	return healStep{"the registry pod deleted", func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.DeleteRegistryPod(ctx))
	}}
}

// restartNSMSystem deletes the nsm-system namespace and applies it again
// (Domain.RestartSystem).
func restartNSMSystem() healStep {
	return healStep{"nsm-system deleted and applied again", func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.RestartSystem(ctx, "-new"))
	}}
}

// replaceEndpoint applies the example's second endpoint, as a Deployment's rolling update
// does: a new pod on node with another /31 first, then the old pod deleted (its interfaces go
// with its namespace; see TestUpstreamHealLocalNseDeath for why they are deleted first). The
// client heals onto the new endpoint; the third and fourth policy checks still expect its old
// address (see TestUpstreamHealLocalNseDeath).
func replaceEndpoint(node int) healStep {
	return healStep{"the endpoint replaced by one with another /31", func(ctx context.Context, t *testing.T, r *healRun) {
		old := r.nse
		oldClientAddr, _ := upstreamAddrs(t, r.client, r.cidr)
		r.nse = r.startEndpoint(ctx, t, r.d.Nodes[node], "nse-kernel-new", upstreamNewCIDR)
		deletePodLinks(ctx, t, old.Pod.Netns)
		require.NoError(t, old.Close())
		requireEventuallyUnregistered(ctx, t, r.d, old.Name)
		r.cidr, r.policySrc = upstreamNewCIDR, oldClientAddr
	}}
}

// stopNsmgrForGood deletes the nsmgr pod of a node and lets none take its place, as
// remote-nsmgr-death's DaemonSet pinned to the other node does.
func stopNsmgrForGood(node int) healStep {
	return healStep{fmt.Sprintf("node %d's nsmgr pod deleted, none in its place", node+1), func(_ context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.StopNsmgrPod(r.d.Nodes[node]))
	}}
}

// moveEndpointFromNsmgrlessNode applies remote-nsmgr-death's second endpoint: a new pod on node
// with another /31, then the old pod deleted. The old endpoint's nsmgr is gone, so it cannot
// withdraw its registration (nor could upstream's): its Close fails, and its record stays until
// it expires.
func moveEndpointFromNsmgrlessNode(node int) healStep {
	return healStep{fmt.Sprintf("the endpoint moved to node %d with another /31", node+1), func(ctx context.Context, t *testing.T, r *healRun) {
		old := r.nse
		oldClientAddr, _ := upstreamAddrs(t, r.client, r.cidr)
		r.nse = r.startEndpoint(ctx, t, r.d.Nodes[node], "nse-kernel-local", upstreamNewCIDR)
		deletePodLinks(ctx, t, old.Pod.Netns)
		err := old.Close()
		t.Logf("the old endpoint, its nsmgr gone, stopped: %v", err)
		r.cidr, r.policySrc = upstreamNewCIDR, oldClientAddr
		r.expiring = append(r.expiring, old.Name)
		// The client's path is local now: no tunnel between the nodes.
		r.sc.overVxlan = node != r.sc.clientNode
	}}
}

// restoreNsmgr gives a node its nsmgr again, and requires the node's VPP and namespace to be
// released of the old path once the forwarder's connection has expired, and the old endpoint's
// record to expire, both within the token lifetime and a heal's time.
func restoreNsmgr(node int) healStep {
	return healStep{fmt.Sprintf("node %d's nsmgr back; the old path released when it expires", node+1), func(ctx context.Context, t *testing.T, r *healRun) {
		n := r.d.Nodes[node]
		require.NoError(t, r.d.RespawnNsmgr(ctx, n))
		deadline := time.Now().Add(r.ex.tokenLifetime + healTimeout)
		var now []domain.VPPInterface
		var err error
		waitUntil(t, deadline, time.Second, func() bool {
			now, err = r.d.VPPInterfaces(ctx, n)
			return err == nil && sameInterfaces(now, n.IdleInterfaces)
		}, func() string {
			return fmt.Sprintf("%s: %s interfaces %v (error %v), before any connection %v", n.Name, r.d.VPPName(), now, err, n.IdleInterfaces)
		})
		requireNodeKernelClean(t, n)
		for _, name := range r.expiring {
			waitUntil(t, deadline, time.Second, func() bool {
				records, listErr := r.d.Endpoints(ctx)
				return listErr == nil && !slices.ContainsFunc(records, func(rec domain.EndpointRecord) bool { return rec.Name == name })
			}, func() string { return name + " is still registered" })
		}
	}}
}

// restartSPIREServer deletes the SPIRE server's pod: SIGTERM, then the server again on its data.
func restartSPIREServer() healStep {
	return healStep{"the SPIRE server pod deleted", func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.SPIRE.RestartServer(ctx))
	}}
}

// restartSPIREAgents deletes every SPIRE agent's pod: SIGTERM, then new agents attesting again.
func restartSPIREAgents() healStep {
	return healStep{"every SPIRE agent pod deleted", func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.SPIRE.RestartAgents(ctx))
	}}
}

// reinstallSPIRE removes SPIRE and installs it again: a new CA, the identities declared again.
func reinstallSPIRE() healStep {
	return healStep{"SPIRE removed and installed again", func(ctx context.Context, t *testing.T, r *healRun) {
		require.NoError(t, r.d.SPIRE.Reinstall(ctx))
	}}
}

// heal/local-nsmgr-local-forwarder-memif, partly: the example's memif client with its own VPP on
// node 1, but a kernel endpoint on node 2 (the harness has no memif endpoint with a VPP of its
// own yet), VXLAN between the nodes. VPP pings; the client node's nsmgr pod deleted, then its
// forwarder pod (a new name); the client heals over a new memif; VPP pings again; Close leaves
// nothing. Real VPP only: the simulator's memif never connects.
func TestUpstreamHealLocalNsmgrLocalForwarderMemifToKernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP == "" {
			t.Skip(noMemifOnSimulator)
		}
		if os.Getenv("E2E_UPSTREAM_SLOW") == "" {
			t.Skip("issue 24: beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
		}
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("ulmemif", 2, realVPP)
		sc.report = "heal/local-nsmgr-local-forwarder-memif (kernel endpoint)"
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[sc.clientNode]
		nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse-kernel", service, upstreamCIDR)
		require.NoError(t, err)
		rep.step("connect: VPP pings both ways")
		client, err := d.ConnectVPPClient(ctx, node, "nsc-memif", fmt.Sprintf("memif://%s/memif0", service))
		require.NoError(t, err, "the client with its own VPP was not granted its connection")
		require.Len(t, client.Connections, 1)
		ipContext := client.Connections[0].GetContext().GetIpContext()
		clientAddr, nseAddr := addrOf(t, ipContext.GetSrcIpAddrs()[0]), addrOf(t, ipContext.GetDstIpAddrs()[0])
		requireClientVPPMemifUp(ctx, t, client)
		requireVPPPing(ctx, t, client, nseAddr)
		requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)

		deletedAt := time.Now()
		rep.step("the client node's nsmgr pod deleted, then its forwarder pod")
		require.NoError(t, d.DeleteNsmgrPod(ctx, node))
		require.NoError(t, d.DeleteForwarderPod(ctx, node, node.ForwarderName+"-new"))
		rep.step("the client heals: VPP pings both ways")
		var out string
		waitUntil(t, deletedAt.Add(healTimeout), 500*time.Millisecond, func() bool {
			out, err = client.CLI(ctx, "ping "+nseAddr+" repeat 2 interval 0.2")
			m := vppPingReceived.FindStringSubmatch(out)
			return err == nil && m != nil && m[2] != "0"
		}, func() string {
			return fmt.Sprintf("the client's VPP does not reach %s %s after the deletions (error %v):\n%s", nseAddr, healTimeout, err, out)
		})
		t.Logf("the client's VPP reaches the endpoint again %s after the nsmgr's deletion", time.Since(deletedAt).Round(100*time.Millisecond))
		requireClientVPPMemifUp(ctx, t, client)
		requireVPPPing(ctx, t, client, nseAddr)
		requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)

		rep.step("close leaves nothing")
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
		var now []domain.VPPInterface
		waitFor(t, 200*time.Millisecond, func() bool {
			now, err = client.Interfaces(ctx)
			return err == nil && sameInterfaces(now, client.IdleInterfaces())
		}, func() string {
			return fmt.Sprintf("the client's VPP after Close: %v (error %v), before the connection %v", now, err, client.IdleInterfaces())
		})
		requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
		requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
		for _, n := range d.Nodes {
			requireVPPClean(ctx, t, d, n)
			requireNodeKernelClean(t, n)
		}
		requireEndpointUnregisters(ctx, t, d, nse)
	})
}
