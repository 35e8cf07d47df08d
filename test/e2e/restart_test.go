package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
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
	runForwarderRestart(t, scenario{report: "forwarder restart, tap", tag: "rtap", kernelType: "tap", linkType: "tuntap", nodes: 1, requestTimeout: crashRequestTimeout})
}

// As TestForwarderRestartOverTap, over veth pairs whose node-side ends VPP
// drives as af-packet interfaces; on the simulator and on real VPP.
func TestForwarderRestartOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, scenario{report: "forwarder restart, veth", tag: "rveth", kernelType: "veth", linkType: "veth", nodes: 1, requestTimeout: crashRequestTimeout, realVPP: realVPP})
	})
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
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	rep := reportOf(t)
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

func runForwarderRestart(t *testing.T, sc scenario) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, nse, client, before := connectWithPolicy(t, sc)
	rep := reportOf(t)
	node := d.Nodes[0]
	connectedInterfaces, err := d.SimulatorInterfaces(ctx, node)
	require.NoError(t, err)
	require.Greater(t, len(connectedInterfaces), len(node.IdleInterfaces), "the connection added no interface to the simulator")

	rep.step("restart")
	restartedAt := time.Now()
	require.NoError(t, d.RestartForwarder(ctx, node))
	readyAfter := time.Since(restartedAt)
	rep.step("heal: client granted again")
	healed := requireHealed(t, restartedAt, client)
	rep.recovered(healed)

	rep.step("healed: kernel state, ping")
	after := requireConnected(ctx, t, d, sc, client, nse)
	logHealFigure(t, "forwarder SIGKILL and restart ("+sc.kernelType+")", healed,
		fmt.Sprintf("the new forwarder was ready %s after the kill", readyAfter.Round(100*time.Millisecond)))
	if ourDesign(d) {
		require.Equal(t, before.clientState.Rules, after.clientState.Rules,
			"the client's policy rules changed across the forwarder's restart\nbefore:\n%s\nafter:\n%s", before.clientState, after.clientState)
	}
	rep.step("healed: no dead run's interface in VPP")
	requireSimulatorKinds(ctx, t, d, node, connectedInterfaces)
	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
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
