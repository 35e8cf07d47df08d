package liveness_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/liveness"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

const checkTimeout = 500 * time.Millisecond

func socketURL(t *testing.T) (*url.URL, net.Listener) {
	path := filepath.Join(t.TempDir(), "listen.on.sock")
	listener, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	return &url.URL{Scheme: "unix", Path: path}, listener
}

func serve(t *testing.T, listener net.Listener, opts ...grpc.ServerOption) {
	server := grpc.NewServer(opts...)
	grpc_health_v1.RegisterHealthServer(server, health.NewServer())
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
}

// The forwarder's own server (the transport options main uses) passes, while no SPIRE agent can
// be reached from the probing side.
func TestTheForwardersServerIsAlive(t *testing.T) {
	t.Setenv("SPIFFE_ENDPOINT_SOCKET", "unix://"+filepath.Join(t.TempDir(), "no-agent.sock"))
	identity := svidtest.NewTrustDomain(t, "liveness.test").Issue("/forwarder")
	listenOn, listener := socketURL(t)
	serve(t, listener, grpctransport.ServerOptions(identity, grpctransport.DefaultKeepalive)...)

	require.NoError(t, liveness.Check(context.Background(), listenOn, checkTimeout))
}

// A TLS 1.2 server refuses a client without a certificate with an alert: it answered, so it lives.
func TestAnAlertFromTheServerIsAnAnswer(t *testing.T) {
	identity := svidtest.NewTrustDomain(t, "liveness.test").Issue("/forwarder")
	svid, err := identity.GetX509SVID()
	require.NoError(t, err)
	listenOn, listener := socketURL(t)
	certificate := tls.Certificate{Certificate: [][]byte{svid.Certificates[0].Raw}, PrivateKey: svid.PrivateKey}
	tlsListener := tls.NewListener(listener, &tls.Config{
		Certificates: []tls.Certificate{certificate}, ClientAuth: tls.RequireAnyClientCert, MaxVersion: tls.VersionTLS12,
	})
	go func() {
		for {
			conn, err := tlsListener.Accept()
			if err != nil {
				return
			}
			go func() { _ = conn.(*tls.Conn).Handshake(); _ = conn.Close() }()
		}
	}()

	require.NoError(t, liveness.Check(context.Background(), listenOn, checkTimeout))
}

func TestWhatIsNotAServingForwarderFails(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		err := liveness.Check(context.Background(), &url.URL{Scheme: "unix", Path: filepath.Join(t.TempDir(), "absent.sock")}, checkTimeout)
		require.ErrorContains(t, err, "connecting to")
	})
	t.Run("hung: connects but never answers", func(t *testing.T) {
		// Nobody accepts: the kernel completes the connection from the backlog, as for a
		// process that is stuck.
		listenOn, _ := socketURL(t)
		start := time.Now()
		err := liveness.Check(context.Background(), listenOn, checkTimeout)
		require.Error(t, err)
		require.Less(t, time.Since(start), 5*checkTimeout, "the check is bounded")
	})
	t.Run("plain gRPC, no TLS", func(t *testing.T) {
		listenOn, listener := socketURL(t)
		serve(t, listener)
		require.ErrorContains(t, liveness.Check(context.Background(), listenOn, checkTimeout), "TLS handshake")
	})
	t.Run("not a socket URL", func(t *testing.T) {
		require.ErrorContains(t, liveness.Check(context.Background(), &url.URL{Scheme: "http", Host: "x:1"}, checkTimeout), "cannot probe")
	})
}
