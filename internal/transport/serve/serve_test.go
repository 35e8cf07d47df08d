package serve_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/serve"
)

func TestStopCutsLongLivedStreamsAfterTheGrace(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nested", "listen.sock")
	grpcServer := grpc.NewServer()
	healthpb.RegisterHealthServer(grpcServer, health.NewServer())
	running, err := serve.Start(&url.URL{Scheme: "unix", Path: socket}, grpcServer)
	require.NoError(t, err)

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

func TestListenFailureIsReportedAtOnce(t *testing.T) {
	_, err := serve.Start(&url.URL{Scheme: "unix", Path: "/proc/forbidden/listen.sock"}, grpc.NewServer())
	require.ErrorContains(t, err, "listening on unix:///proc/forbidden/listen.sock")
}

func TestStaleSocketIsReplacedAndTCPPortIsResolved(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "listen.sock")
	stale, err := net.Listen("unix", socket)
	require.NoError(t, err)
	if unixListener, ok := stale.(*net.UnixListener); ok {
		unixListener.SetUnlinkOnClose(false) // a crashed previous run leaves its socket file behind
	}
	require.NoError(t, stale.Close())
	require.FileExists(t, socket)
	running, err := serve.Start(&url.URL{Scheme: "unix", Path: socket}, grpc.NewServer())
	require.NoError(t, err)
	running.Stop(0)

	listenOn := &url.URL{Scheme: "tcp", Host: "127.0.0.1:0"}
	running, err = serve.Start(listenOn, grpc.NewServer())
	require.NoError(t, err)
	defer running.Stop(0)
	require.NotEqual(t, "127.0.0.1:0", listenOn.Host, "the registered URL must carry the real port")
	conn, err := net.Dial("tcp", listenOn.Host)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
}
