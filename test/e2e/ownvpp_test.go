package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// ownVPPStopBound is how long a forwarder whose own VPP crashed may take to stop by itself: its
// shutdown steps are bounded (internal/startup) and a dead VPP must not stretch them.
const ownVPPStopBound = 30 * time.Second

// The forwarder's own-VPP mode, as in the stock image (no external VPP: it starts vpp itself
// through vpphelper, with the start-up configuration it is given at /etc/vpp/helper/vpp.conf),
// on real VPP only: the simulator is never started by the forwarder. It serves a connection;
// then VPP is SIGKILLed under it: the forwarder must stop by itself, at once and within its
// shutdown bounds, saying VPP exited, and leave no half of the connection behind (its shutdown
// closes it: both pods are empty again, and the next run finds no leftovers); started again (as
// the kubelet restarts the container) it starts a fresh VPP, the client heals through it, and
// Close leaves nothing.
func TestForwarderOwnVPP(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if !forwarder.Ours {
		t.Skipf("%s runs beside an external VPP only (test/stockforwarder: no own-VPP mode); the mode is this forwarder's", forwarder.Name)
	}
	sc := scenario{tag: "own", kernelType: "veth", linkType: "veth", nodes: 1, realVPP: realvpp.Require(t), ownVPP: true, requestTimeout: crashRequestTimeout}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	node := d.Nodes[0]
	require.Equal(t, []string{"local0", "host-eth0"}, interfaceNames(node.IdleInterfaces), "the forwarder gave its VPP the uplink")
	nse, err := d.StartEndpoint(ctx, node, "nse", service, endpointCIDR, domain.WithPolicyRoutes(policyPrefix))
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	requireConnected(ctx, t, d, sc, client, nse)

	killedAt := time.Now()
	require.NoError(t, d.KillVPP(node))
	waitUntil(t, killedAt.Add(ownVPPStopBound), 100*time.Millisecond, func() bool {
		exited, _ := node.Forwarder.Exited()
		return exited
	}, func() string {
		return fmt.Sprintf("the forwarder still runs %s after its VPP was SIGKILLed:\n%s", ownVPPStopBound, node.Forwarder.LogTail(30))
	})
	_, exitErr := node.Forwarder.Exited()
	require.Error(t, exitErr, "a forwarder whose VPP died must exit non-zero, so that it is restarted")
	require.Contains(t, node.Forwarder.LogTail(60), "VPP exited")
	t.Logf("the forwarder stopped %s after its VPP was SIGKILLed", time.Since(killedAt).Round(100*time.Millisecond))
	requireEventuallyEmpty(t, "client pod once the forwarder stopped", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod once the forwarder stopped", nse.Pod.Netns)
	requireNodeKernelClean(t, node)
	logStart := len(node.Forwarder.LogTail(100000))

	require.NoError(t, d.RespawnForwarder(ctx, node))
	require.Contains(t, node.Forwarder.LogTail(100000)[logStart:], "connections with leftovers from a previous run: []",
		"the crashed run left something for the next one")
	requireGrantedAgainAfter(t, client, killedAt)
	t.Logf("client granted its connection again %s after the crash", time.Since(killedAt).Round(100*time.Millisecond))
	require.NoError(t, client.ReloadConnections())
	requireConnected(ctx, t, d, sc, client, nse)
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

func interfaceNames(interfaces []domain.VPPInterface) []string {
	names := make([]string, 0, len(interfaces))
	for _, i := range interfaces {
		names = append(names, i.Name)
	}
	return names
}
