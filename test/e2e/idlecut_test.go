package e2e_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// idleCut is how long the middlebox in front of each nsmgr lets a
	// connection stay silent before it resets it; far below any keepalive, so
	// that the monitor stream from the client's forwarder to the endpoint's
	// node is cut again and again.
	idleCut = 3 * time.Second
	// idleWindow is how long the scenario watches the client for heals.
	idleWindow = 20 * time.Second
)

// Client on node1, endpoint on node2 (kernel, VXLAN, kernel), and a
// middlebox in front of each nsmgr that resets connections idle for 3 s, as
// a cloud load balancer does with idle flows (field report 4). Nothing fails:
// over 20 s the client must not heal (re-Request) once, and the data path
// must still work. The middlebox must have cut at least one connection, or
// the scenario showed nothing.
func TestIdleCutMonitorStreamsAcrossNodes(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{tag: "idle", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, idleCut: idleCut, report: "idle monitor streams cut, two nodes"}
	ctx, d, rep := startScenario(t, sc, shortScenarioTime)
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR)
	require.NoError(t, err)
	client := connectClient(ctx, t, d, sc)
	rep.step("connected: kernel state, ping")
	requireConnected(ctx, t, d, sc, client, nse)

	rep.step("no heal while idle streams are cut")
	granted, err := client.ConnectionsWritten()
	require.NoError(t, err)
	heals := 0
	for end := time.Now().Add(idleWindow); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		written, writtenErr := client.ConnectionsWritten()
		require.NoError(t, writtenErr)
		if written.After(granted) {
			heals++
			granted = written
		}
	}
	rep.heals(heals)
	cuts := 0
	for _, node := range d.Nodes {
		n, cutsErr := node.IdleCuts()
		require.NoError(t, cutsErr)
		cuts += n
	}
	t.Logf("%d connections cut while idle, %d heals of the client in %s", cuts, heals, idleWindow)
	require.Positive(t, cuts, "the middlebox cut no connection: the scenario tested nothing")
	require.Zero(t, heals, "the client was granted its connection again %d times in %s with nothing failed but idle connections cut:\n%s", heals, idleWindow, client.Proc.LogTail(30))

	rep.step("still connected: kernel state, ping")
	require.NoError(t, client.ReloadConnections())
	requireConnected(ctx, t, d, sc, client, nse)
	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}
