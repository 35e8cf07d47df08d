package grpctransport_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport/grpctransporttest"
)

// The test timings keep the production ratios (server floor = half the client interval) at the
// smallest client interval gRPC allows (10 s).
const (
	testClientInterval = 10 * time.Second
	idleCutAfter       = 15 * time.Second // a middlebox that drops flows idle this long
	survivalWindow     = 35 * time.Second // over two cuts' worth of idleness
)

func TestDefaultKeepaliveFitsItsOwnEnforcement(t *testing.T) {
	ka := grpctransport.DefaultKeepalive
	require.LessOrEqual(t, ka.ServerMinInterval, ka.ClientInterval/2, "client pings must never count as strikes")
	require.Less(t, ka.ClientInterval, time.Minute, "pings must beat the shortest middlebox idle timeout")
	require.Less(t, ka.ServerInterval, time.Minute)
}

// Three idle streams cross the same kind of idle-cutting middlebox for the same time: one kept
// alive by its client's pings (under the server's enforcement floor), one by the server's pings
// (nsmgr's monitor streams come from clients we do not control), and one without keepalive,
// which the middlebox must cut for the test to mean anything.
func TestKeepaliveCarriesIdleStreamsThroughAnIdleCutter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits through several keepalive intervals")
	}
	clientPings := grpctransport.Keepalive{
		ClientInterval:    testClientInterval,
		ClientTimeout:     5 * time.Second,
		ServerInterval:    time.Hour, // only the client's pings keep this flow alive
		ServerTimeout:     5 * time.Second,
		ServerMinInterval: testClientInterval / 2,
	}
	serverPings := grpctransport.DefaultKeepalive
	serverPings.ServerInterval = testClientInterval

	byClient, byClientCutter := idleStream(t, clientPings.ServerOptions(), clientPings.DialOption())
	byServer, byServerCutter := idleStream(t, serverPings.ServerOptions())
	unprotected, unprotectedCutter := idleStream(t, nil)

	streams := []healthpb.Health_WatchClient{byClient, byServer, unprotected}
	results := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, stream := range streams {
		wg.Go(func() { results[i] = recvWithin(stream, survivalWindow) })
	}
	wg.Wait()
	require.ErrorIs(t, results[0], context.DeadlineExceeded, "client pings kept the stream open")
	require.Zero(t, byClientCutter.Cuts())
	require.ErrorIs(t, results[1], context.DeadlineExceeded, "server pings kept the stream open")
	require.Zero(t, byServerCutter.Cuts())
	require.NotErrorIs(t, results[2], context.DeadlineExceeded, "without pings the middlebox cuts the stream")
	require.Positive(t, unprotectedCutter.Cuts())
}

func TestServerStricterThanTheClientsSendsGoaway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for three ping strikes")
	}
	ka := grpctransport.Keepalive{
		ClientInterval:    testClientInterval,
		ClientTimeout:     5 * time.Second,
		ServerInterval:    time.Hour,
		ServerTimeout:     5 * time.Second,
		ServerMinInterval: 2 * testClientInterval, // stricter than the clients: every ping is a strike
	}
	stream, _ := idleStream(t, ka.ServerOptions(), ka.DialOption())

	err := recvWithin(stream, 2*survivalWindow)
	require.ErrorContains(t, err, "too_many_pings", "the enforcement policy is what makes the difference")
}

// idleStream opens a health Watch stream (one status, then silence) from a client to a server
// through an idle-cutter, and returns it after the first status.
func idleStream(t *testing.T, serverOptions []grpc.ServerOption, dialOptions ...grpc.DialOption) (healthpb.Health_WatchClient, *grpctransporttest.IdleCutter) {
	serverListener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer(serverOptions...)
	healthpb.RegisterHealthServer(server, health.NewServer())
	go func() { _ = server.Serve(serverListener) }()
	t.Cleanup(server.Stop)

	cutter := grpctransporttest.StartIdleCutter(t, serverListener.Addr().String(), idleCutAfter)
	conn, err := grpc.NewClient(cutter.Address, append(dialOptions, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, first.GetStatus())
	return stream, cutter
}

// recvWithin waits for the stream's next message or error; context.DeadlineExceeded means the
// stream stayed open and silent for the whole window.
func recvWithin(stream healthpb.Health_WatchClient, window time.Duration) error {
	received := make(chan error, 1)
	go func() {
		_, err := stream.Recv()
		received <- err
	}()
	select {
	case err := <-received:
		if err == nil {
			return io.ErrUnexpectedEOF
		}
		return err
	case <-time.After(window):
		return context.DeadlineExceeded
	}
}
