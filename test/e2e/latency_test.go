package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// latencyClients is how many clients the latency scenario connects, one after another.
const latencyClients = 8

// Clients connect one after another over tap, each checked, pinged and closed before the next:
// a sample of first Request latencies large enough for a spread (`make compare`). Every client
// must get what its connection says, and leave nothing.
func TestSequentialClientsFirstRequest(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{tag: "lat", kernelType: "tap", linkType: "tuntap", nodes: 1, report: fmt.Sprintf("%d clients one after another", latencyClients)}
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	nse, err := d.StartEndpoint(ctx, d.Nodes[0], "nse", service, endpointCIDR)
	require.NoError(t, err)
	for i := range latencyClients {
		rep.step(fmt.Sprintf("client %d: connect", i+1))
		client, connectErr := d.Connect(ctx, d.Nodes[0], fmt.Sprintf("nsc%d", i+1), fmt.Sprintf("kernel://%s/%s", service, clientIfname))
		require.NoError(t, connectErr)
		require.Len(t, client.Connections, 1)
		rep.step(fmt.Sprintf("client %d: kernel state, ping", i+1))
		requireConnected(ctx, t, d, sc, client, nse)
		rep.step(fmt.Sprintf("client %d: close leaves nothing", i+1))
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
		requireIdle(ctx, t, d, client, nse)
		require.NoError(t, client.DeletePod())
	}
	rep.step("endpoint unregisters")
	requireEndpointUnregisters(ctx, t, d, nse)
	latencies := []time.Duration{}
	for _, c := range d.Clients() {
		l, latErr := c.RequestLatencies()
		require.NoError(t, latErr)
		latencies = append(latencies, l...)
	}
	t.Logf("first Request latencies: %v", latencies)
}
