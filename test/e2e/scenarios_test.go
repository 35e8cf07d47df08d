package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

const (
	service      = "icmp-responder"
	clientIfname = "nsm-1"
	endpointCIDR = "172.16.100.0/24"
	scenarioTime = 4 * time.Minute
)

// Kernel to kernel on one node, the forwarder wiring both pods with taps
// that VPP owns. Simulator only: VPP's taps need /dev/vhost-net, which these
// machines lack (tap_create_v3 answers -11).
func TestLocalKernelToKernelOverTap(t *testing.T) {
	runScenario(t, scenario{tag: "tap", kernelType: "tap", linkType: "tuntap", nodes: 1, clientNode: 0, endpointNode: 0})
}

// Kernel to kernel on one node over veth pairs whose node-side ends VPP
// drives as af-packet interfaces; on the simulator and on real VPP.
func TestLocalKernelToKernelOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runScenario(t, scenario{tag: "veth", kernelType: "veth", linkType: "veth", nodes: 1, clientNode: 0, endpointNode: 0, realVPP: realVPP})
	})
}

// The tap scenario on the stock-equivalent forwarder (test/stockforwarder),
// whatever E2E_FORWARDER says: the comparison's reference runs, and its tap
// choice follows the /dev/vhost-net the harness shows it (`make compare` runs
// the crash scenarios on it).
func TestStockEquivalentOverTap(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	stock := binaries.Stock()
	runScenario(t, scenario{tag: "stap", kernelType: "tap", linkType: "tuntap", nodes: 1, clientNode: 0, endpointNode: 0, forwarder: &stock})
}

// Client on node1, endpoint on node2: kernel, then VXLAN between the nodes'
// tunnel IPs, then kernel; on the simulator and on real VPP.
func TestRemoteKernelVxlanKernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runScenario(t, scenario{tag: "vxlan", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, realVPP: realVPP})
	})
}

// onEachVPP runs a scenario as the subtest vppsim, on the simulator, and as
// the subtest vpp, on real VPP (test/realvpp): realVPP is then its binary.
// Without a real VPP the second subtest skips, saying where it looked.
func onEachVPP(t *testing.T, run func(t *testing.T, realVPP string)) {
	t.Run("vppsim", func(t *testing.T) { run(t, "") })
	t.Run("vpp", func(t *testing.T) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		run(t, realvpp.Require(t))
	})
}

type scenario struct {
	tag string
	// chainRestart, hopTwoDeath and chainClose choose a chain scenario's steps (runChain): a
	// forwarder restart, the final endpoint's death, and the Close with its checks.
	chainRestart, hopTwoDeath, chainClose bool
	// chainReselects runs the chain's client without its liveness check (startChain), so that
	// a forwarder restart heals the chain by a reselect: the whole chain closed and requested
	// again.
	chainReselects bool
	kernelType     string
	// linkType is the kind of pod interface the kernel must report; empty
	// when the forwarder chooses (auto).
	linkType                 string
	nodes                    int
	clientNode, endpointNode int
	// overVxlan requires a VXLAN tunnel in every node's VPP while connected.
	overVxlan bool
	// tokenLifetime is every program's NSM_MAX_TOKEN_LIFETIME; zero keeps
	// their default (10m).
	tokenLifetime time.Duration
	// requestTimeout is the client's NSM_REQUEST_TIMEOUT; zero keeps its
	// default (30s).
	requestTimeout time.Duration
	// idleCut puts a middlebox that resets connections idle this long in
	// front of every nsmgr for the other nodes (domain.Config.IdleCut).
	idleCut time.Duration
	// forwarder, when set, runs instead of the suite's (E2E_FORWARDER).
	forwarder *domain.Forwarder
	// report is the row `make compare` records this scenario's runs under (reportOf); empty
	// records nothing.
	report string
	// realVPP is the vpp binary every node runs; empty runs the simulator.
	realVPP string
	// forwarderEnv is added to the forwarders' environment.
	forwarderEnv []string
	// ownVPP makes each forwarder start realVPP itself (its own-VPP mode) instead of using an
	// external one.
	ownVPP bool
	// callLogs makes every nsmgr record the Requests and Closes it serves and makes
	// (domain.Config.CallLogs).
	callLogs bool
	// logLevel is the harness programs' log level; DEBUG when empty.
	logLevel string
	// cidr is the endpoint's NSM_CIDR_PREFIX (a comma-separated list hands out an address of each
	// family); empty is endpointCIDR.
	cidr string
	// policies are the endpoint's NSM_POLICY_ROUTES where the scenario asks for policy routes; nil
	// is crashPolicies.
	policies []string
	// vlanTrunk gives every node a trunk for the remote vlan mechanism (domain.Config.VlanTrunk).
	vlanTrunk *domain.VlanTrunk
	// excludedPrefixes are the cluster's excluded prefixes every nsmgr reads
	// (domain.Config.ExcludedPrefixes).
	excludedPrefixes []string
}

func runScenario(t *testing.T, sc scenario) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)

	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, cmp.Or(sc.cidr, endpointCIDR))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requireConnected(ctx, t, d, sc, client, nse)
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// connectClient starts the scenario's client and checks what it was granted.
func connectClient(ctx context.Context, t *testing.T, d *domain.Domain, sc scenario) *domain.Client {
	t.Helper()
	client, err := d.Connect(ctx, d.Nodes[sc.clientNode], "nsc", fmt.Sprintf("kernel://%s/%s", service, clientIfname))
	require.NoError(t, err)
	require.Len(t, client.Connections, 1)
	return client
}

// connectionView is what a granted connection looks like in the kernel.
type connectionView struct {
	ipContext   *networkservice.IPContext
	clientState *topology.State
	nseIfname   string
}

// requireConnected checks that both pods hold exactly what the client's
// connection says and that ping works both ways.
func requireConnected(ctx context.Context, t *testing.T, d *domain.Domain, sc scenario, client *domain.Client, nse *domain.Endpoint) connectionView {
	t.Helper()
	conn := client.Connections[0]
	require.Equal(t, clientIfname, conn.GetMechanism().GetParameters()[common.InterfaceNameKey])
	ipContext := conn.GetContext().GetIpContext()
	require.NotEmpty(t, ipContext.GetSrcIpAddrs(), "the endpoint's IPAM gave the client no address")
	require.NotEmpty(t, ipContext.GetDstIpAddrs(), "the endpoint's IPAM gave itself no address")

	clientState, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	requireKernelMatches(t, "client pod", clientState, clientIfname, ipContext.GetSrcIpAddrs(), clientRoutes(ipContext), ipContext.GetPolicies())
	if ourDesign(d) {
		requireRulesMarked(t, "client pod", clientState)
	}
	nseState, err := topology.Inspect(nse.Pod.Netns)
	require.NoError(t, err)
	nseIfname := onlyNonLoopback(t, "endpoint pod", nseState)
	requireKernelMatches(t, "endpoint pod", nseState, nseIfname, ipContext.GetDstIpAddrs(), endpointRoutes(ipContext), nil)
	if sc.linkType != "" {
		clientLink, _ := clientState.Link(clientIfname)
		nseLink, _ := nseState.Link(nseIfname)
		require.Equal(t, sc.linkType, clientLink.Type, "client pod interface kind\n%s", clientState)
		require.Equal(t, sc.linkType, nseLink.Type, "endpoint pod interface kind\n%s", nseState)
	}

	if sc.overVxlan {
		for _, node := range d.Nodes {
			requireVPPHolds(ctx, t, d, node, "vxlan")
		}
	}
	for _, dst := range ipContext.GetDstIpAddrs() {
		requirePing(ctx, t, client.Pod.Netns, clientIfname, dst)
	}
	for _, src := range ipContext.GetSrcIpAddrs() {
		requirePing(ctx, t, nse.Pod.Netns, nseIfname, src)
	}
	return connectionView{ipContext: ipContext, clientState: clientState, nseIfname: nseIfname}
}

// requireCloseLeavesNothing closes the client and requires every pod, node
// and VPP to be as before the first connection, then stops the
// endpoint and requires it to be gone from the registry.
func requireCloseLeavesNothing(ctx context.Context, t *testing.T, d *domain.Domain, client *domain.Client, nse *domain.Endpoint) {
	t.Helper()
	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireIdleThenStopEndpoint(ctx, t, d, client, nse)
}

// requireIdleThenStopEndpoint requires the data plane to be back to idle,
// then stops the endpoint and requires it to be gone from the registry.
func requireIdleThenStopEndpoint(ctx context.Context, t *testing.T, d *domain.Domain, client *domain.Client, nse *domain.Endpoint) {
	t.Helper()
	requireIdle(ctx, t, d, client, nse)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// requireIdle requires both pods to be fresh namespaces again and every
// node's VPP and namespace to be as before the first connection.
func requireIdle(ctx context.Context, t *testing.T, d *domain.Domain, client *domain.Client, nse *domain.Endpoint) {
	t.Helper()
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, node := range d.Nodes {
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
	}
}

// requireEndpointUnregisters stops the endpoint and requires it to be gone
// from the registry.
func requireEndpointUnregisters(ctx context.Context, t *testing.T, d *domain.Domain, nse *domain.Endpoint) {
	t.Helper()
	require.NoError(t, nse.Close())
	requireEventuallyUnregistered(ctx, t, d, nse.Name)
}

// startDomain brings a domain up for one scenario and tears it down at the
// end, printing diagnostics first if the scenario failed.
// startScenario starts sc's domain under a context that ends after timeout or when the test does,
// and returns both with the scenario's report.
func startScenario(t *testing.T, sc scenario, timeout time.Duration) (context.Context, *domain.Domain, *report) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	d := startDomain(ctx, t, sc)
	// Registered after the domain's tear-down, so it runs before it: what the test started under
	// ctx (background pings, waits) ends first, as it did when each test deferred its cancel.
	t.Cleanup(cancel)
	return ctx, d, reportOf(t)
}

func startDomain(ctx context.Context, t testing.TB, sc scenario) *domain.Domain {
	fwd := forwarder
	if sc.forwarder != nil {
		fwd = *sc.forwarder
	}
	workDir, err := os.MkdirTemp("", "e2e-")
	require.NoError(t, err)
	d, err := domain.Start(ctx, domain.Config{
		Binaries:             binaries,
		Forwarder:            fwd,
		SpireBinDir:          filepath.Join(repoRoot, ".cache", "bin"),
		WorkDir:              workDir,
		NetnsPrefix:          topology.RunPrefix(netnsBase) + sc.tag + "-",
		Nodes:                sc.nodes,
		KernelInterfaceType:  sc.kernelType,
		LogLevel:             cmp.Or(sc.logLevel, "DEBUG"),
		MaxTokenLifetime:     sc.tokenLifetime,
		ClientRequestTimeout: sc.requestTimeout,
		IdleCut:              sc.idleCut,
		RealVPP:              sc.realVPP,
		ForwarderStartsVPP:   sc.ownVPP,
		ForwarderEnv:         sc.forwarderEnv,
		CallLogs:             sc.callLogs,
		VlanTrunk:            sc.vlanTrunk,
		ExcludedPrefixes:     sc.excludedPrefixes,
		// Empty means the forwarder's own default (INFO).
		ForwarderLogLevel: os.Getenv("E2E_FORWARDER_LOG_LEVEL"),
	})
	if err != nil {
		t.Fatalf("domain did not come up (logs kept in %s): %v", workDir, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s\n%s", workDir, d.Diagnostics())
		}
		if closeErr := d.Close(); closeErr != nil {
			t.Errorf("tear-down left something behind or a program did not stop cleanly (logs in %s): %v", workDir, closeErr)
		}
		if !t.Failed() && os.Getenv("E2E_KEEP_WORKDIR") == "" {
			_ = os.RemoveAll(workDir)
		}
		if os.Getenv("E2E_KEEP_WORKDIR") != "" {
			t.Logf("logs kept in %s (E2E_KEEP_WORKDIR)", workDir)
		}
	})
	if sc.report != "" {
		// After the tear-down's clean-up, so that it runs before it.
		reportScenario(t.(*testing.T), d, sc.report)
	}
	return d
}

func requirePing(ctx context.Context, t *testing.T, netns, ifname, cidr string) (output string) {
	t.Helper()
	dst := addrOf(t, cidr)
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netns,
		"ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", ifname, dst).CombinedOutput()
	require.NoError(t, err, "ping %s from %s via %s:\n%s", dst, netns, ifname, out)
	return string(out)
}
