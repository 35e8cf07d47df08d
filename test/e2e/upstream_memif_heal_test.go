package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The memif examples of deployments-k8s v1.18.0's examples/heal (issue 24,
// docs/upstream-examples.md): a client and an endpoint each with a VPP of its own over memif
// (nsc-memif, nse-memif), the README's VPP pings both ways, its deaths and restarts in its
// order, the same pings again (between the new addresses where the endpoint was replaced), and
// the harness's baseline check after Close. Real VPP only, E2E_UPSTREAM_SLOW=1 (make
// upstream-slow). Differences from upstream as in upstream_heal_test.go: pod deletion is SIGTERM
// and a new process (a forwarder under a new name), the registry comes back empty, the nodes'
// VPPs are external and stay.

// memifHealExample is one example of examples/heal with memif at both ends.
type memifHealExample struct {
	memifExample
	// steps are the example's deaths and restarts, in its order.
	steps []memifHealStep
}

// memifHealStep is one of an example's deaths and restarts.
type memifHealStep struct {
	what string
	do   func(ctx context.Context, t *testing.T, r *memifRun)
}

var memifHealExamples = []memifHealExample{
	{memifExample{folder: "heal", name: "local-nsmgr-local-forwarder-memif", tag: "fhlnf", nodes: 2, memifClient: true, memifEndpoint: true,
		payload: "ETHERNET", cidr: upstreamMemifCIDR}, []memifHealStep{memifDeleteNsmgrPod(0), memifDeleteForwarderPod(0)}},
	{memifExample{folder: "heal", name: "local-nsmgr-local-nse-memif", tag: "fhlne", nodes: 1, memifClient: true, memifEndpoint: true,
		payload: "ETHERNET", cidr: upstreamMemifCIDR}, []memifHealStep{memifDeleteEndpoint(), memifDeleteNsmgrPod(0), memifNewEndpoint()}},
	{memifExample{folder: "heal", name: "remote-nsm-system-restart-memif-ip", tag: "fhsys", nodes: 2, memifClient: true, memifEndpoint: true,
		payload: "IP", cidr: upstreamMemifCIDR}, []memifHealStep{memifRestartNSMSystem()}},
}

// TestUpstreamMemifHealExamples runs every memif heal example as a subtest named after it, each
// on the simulator (skipped) and on real VPP.
func TestUpstreamMemifHealExamples(t *testing.T) {
	for _, example := range memifHealExamples {
		t.Run(example.name, func(t *testing.T) {
			skipUnlessFeaturesSlow(t)
			onEachVPP(t, func(t *testing.T, realVPP string) {
				if realVPP == "" {
					t.Skip(noMemifOnSimulator)
				}
				runMemifHealExample(t, example, realVPP)
			})
		})
	}
}

func runMemifHealExample(t *testing.T, example memifHealExample, realVPP string) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	r := startMemifExample(ctx, t, example.memifExample, realVPP)
	clientAddr, nseAddr := upstreamMemifAddrs(example.cidr)
	r.requireConnected(ctx, t, clientAddr, nseAddr)
	r.requirePings(ctx, t, clientAddr, nseAddr)

	started := time.Now()
	for _, step := range example.steps {
		r.rep.step(step.what)
		step.do(ctx, t, r)
	}
	r.rep.step("heal: the client's VPP reaches the endpoint")
	clientAddr, nseAddr = upstreamMemifAddrs(r.cidr())
	var out string
	var err error
	waitUntil(t, time.Now().Add(healTimeout), 500*time.Millisecond, func() bool {
		out, err = r.clientEnd.vpp.CLI(ctx, "ping "+nseAddr+" repeat 2 interval 0.2")
		m := vppPingReceived.FindStringSubmatch(out)
		if err != nil || m == nil {
			return false
		}
		received, _ := strconv.Atoi(m[2])
		return received > 0
	}, func() string {
		return fmt.Sprintf("the client's VPP does not reach %s %s after the last step (error %v):\n%s", nseAddr, healTimeout, err, out)
	})
	r.rep.recovered(time.Since(started))
	t.Logf("the client's VPP reaches the endpoint %s after the first step", time.Since(started).Round(100*time.Millisecond))
	r.requireConnected(ctx, t, clientAddr, nseAddr)
	r.requirePings(ctx, t, clientAddr, nseAddr)
	r.requireCloseLeavesNothing(ctx, t)
}

// memifNewCIDR is the "another CIDR" of local-nsmgr-local-nse-memif's new endpoint.
const memifNewCIDR = "172.16.1.102/31"

// cidr is the current endpoint's range.
func (r *memifRun) cidr() string {
	if r.nseCIDR != "" {
		return r.nseCIDR
	}
	return r.example.cidr
}

// memifDeleteNsmgrPod deletes the nsmgr pod of a node: SIGTERM, then the DaemonSet's new pod.
func memifDeleteNsmgrPod(node int) memifHealStep {
	return memifHealStep{fmt.Sprintf("node %d's nsmgr pod deleted", node+1), func(ctx context.Context, t *testing.T, r *memifRun) {
		require.NoError(t, r.d.DeleteNsmgrPod(ctx, r.d.Nodes[node]))
	}}
}

// memifDeleteForwarderPod deletes the forwarder pod of a node: SIGTERM, then a forwarder under a
// new name.
func memifDeleteForwarderPod(node int) memifHealStep {
	return memifHealStep{fmt.Sprintf("node %d's forwarder pod deleted", node+1), func(ctx context.Context, t *testing.T, r *memifRun) {
		n := r.d.Nodes[node]
		require.NoError(t, r.d.DeleteForwarderPod(ctx, n, n.ForwarderName+"-new"))
	}}
}

// memifDeleteEndpoint deletes the endpoint's Deployment: its pod, VPP and all, and its record.
func memifDeleteEndpoint() memifHealStep {
	return memifHealStep{"the endpoint deleted", func(ctx context.Context, t *testing.T, r *memifRun) {
		require.NoError(t, r.deleteEndpoint())
		requireEventuallyUnregistered(ctx, t, r.d, r.nse.Name)
	}}
}

// memifNewEndpoint applies the example's new endpoint: a new pod on the endpoint's node with
// another CIDR.
func memifNewEndpoint() memifHealStep {
	return memifHealStep{"a new endpoint with another CIDR", func(ctx context.Context, t *testing.T, r *memifRun) {
		r.nseCIDR = memifNewCIDR
		r.startEndpoint(ctx, t, "-new", memifNewCIDR)
	}}
}

// memifRestartNSMSystem deletes nsm-system and applies it again (Domain.RestartSystem).
func memifRestartNSMSystem() memifHealStep {
	return memifHealStep{"nsm-system deleted and applied again", func(ctx context.Context, t *testing.T, r *memifRun) {
		require.NoError(t, r.d.RestartSystem(ctx, "-new"))
	}}
}
