package xconnect_test

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/monitorretry"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// watchDownEvents serves the forwarder's MonitorConnections as nsmgr sees it and reports every
// connection the forwarder announces DOWN.
func watchDownEvents(t *testing.T, h *harness) <-chan *networkservice.Connection {
	t.Helper()
	listener, err := net.Listen("unix", filepath.Join(t.TempDir(), "forwarder.sock"))
	require.NoError(t, err)
	server := grpc.NewServer()
	h.forwarder.Register(server)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	cc, err := grpc.NewClient("unix://"+listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	stream, err := networkservice.NewMonitorConnectionClient(cc).MonitorConnections(h.ctx, &networkservice.MonitorScopeSelector{})
	require.NoError(t, err)

	down := make(chan *networkservice.Connection, 16)
	go func() {
		for {
			event, err := stream.Recv()
			if err != nil {
				return
			}
			for _, conn := range event.GetConnections() {
				if conn.GetState() == networkservice.State_DOWN {
					down <- conn
				}
			}
		}
	}()
	return down
}

func newMonitoredHarness(t *testing.T, retry ...monitorretry.Option) (*harness, *nextHop, <-chan *networkservice.Connection) {
	t.Helper()
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	hop := kernelNextHop(nseNS, "nse-1")
	hop.cutMonitorStreams, hop.monitorCutDelay = 1, 300*time.Millisecond
	h := newHarness(t, vpptest.Sim, kernelif.Tap, hop, xconnect.WithMonitorRetryOptions(retry...))
	down := watchDownEvents(t, h)
	h.request(t, kernelRequest("conn-monitor", nscNS, "nsc-1", payload.IP))
	return h, hop, down
}

func TestCutMonitorStreamIsReportedDownWithoutRetry(t *testing.T) {
	_, _, down := newMonitoredHarness(t, monitorretry.WithReopenTimeout(0))
	select {
	case conn := <-down:
		require.Equal(t, "conn-monitor", conn.GetPath().GetPathSegments()[0].GetId())
	case <-time.After(5 * time.Second):
		t.Fatal("a cut next-hop monitor stream no longer causes DOWN: the scenario does not reproduce field report 4")
	}
}

func TestCutMonitorStreamIsReestablishedBeforeAnyDown(t *testing.T) {
	_, hop, down := newMonitoredHarness(t)
	require.Eventually(t, func() bool { return hop.monitorStreams.Load() >= 2 }, 5*time.Second, 20*time.Millisecond,
		"the forwarder did not re-open the cut monitor stream")
	select {
	case conn := <-down:
		t.Fatalf("connection %s reported DOWN although its next hop was reachable", conn.GetId())
	case <-time.After(time.Second):
	}
}

// A next hop SIGKILLed (its socket stays, refusing) is reported DOWN at once, far within the dial
// timeout that bounds the re-open, although the dials wait for ready as in production: healing
// must start as early as with the stock forwarder.
func TestDeadNextHopIsReportedDownAtOnce(t *testing.T) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	hop := kernelNextHop(nseNS, "nse-1")
	h := newHarness(t, vpptest.Sim, kernelif.Tap, hop,
		xconnect.WithDialOptions(forwarderDialOptions(grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))...),
		xconnect.WithDialTimeout(30*time.Second))
	down := watchDownEvents(t, h)
	h.request(t, kernelRequest("conn-dead-hop", nscNS, "nsc-1", payload.IP))
	require.Eventually(t, func() bool { return hop.monitorStreams.Load() >= 1 }, 5*time.Second, 20*time.Millisecond,
		"the forwarder never monitored its next hop")

	hop.kill()
	killedAt := time.Now()
	select {
	case conn := <-down:
		require.Equal(t, "conn-dead-hop", conn.GetPath().GetPathSegments()[0].GetId())
		t.Logf("reported DOWN %v after the next hop died", time.Since(killedAt).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("a dead next hop was not reported DOWN at once")
	}
	require.EqualValues(t, 1, hop.monitorStreams.Load(), "nothing answered the re-open")
}
