package serve_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nsmfwd/forwarder-vpp/internal/serve"
)

func TestStopCutsLongLivedStreamsAfterTheGrace(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nested", "listen.sock")
	grpcServer := grpc.NewServer()
	healthpb.RegisterHealthServer(grpcServer, health.NewServer())
	running := serve.Start(&url.URL{Scheme: "unix", Path: socket}, grpcServer)

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	stream, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err, "the server listens on a socket in a directory it created")

	start := time.Now()
	running.Stop(200 * time.Millisecond)
	require.Less(t, time.Since(start), time.Second, "a monitor-like stream never ends by itself; Stop must")
	_, err = stream.Recv()
	require.Error(t, err)

	select {
	case err, open := <-running.Errors:
		require.False(t, open && err != nil, "a requested stop is not a serving error: %v", err)
	case <-time.After(time.Second):
		t.Fatal("Errors is not closed after Stop")
	}
}

func TestListenFailureArrivesOnErrors(t *testing.T) {
	running := serve.Start(&url.URL{Scheme: "unix", Path: "/proc/forbidden/listen.sock"}, grpc.NewServer())
	select {
	case err := <-running.Errors:
		require.Error(t, err)
	case <-time.After(time.Second):
		t.Fatal("no error for an impossible socket path")
	}
}
