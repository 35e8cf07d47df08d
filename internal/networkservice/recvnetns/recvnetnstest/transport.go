package recvnetnstest

import (
	"net"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/edwarnicke/grpcfd"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// ForwarderCredentials are the forwarder's transport, its server's and its dials', less TLS.
func ForwarderCredentials() credentials.TransportCredentials {
	return fdtransport.TransportCredentials(insecure.NewCredentials())
}

// NSMgrCredentials are a stock nsmgr's transport less TLS: grpcfd.
func NSMgrCredentials() credentials.TransportCredentials {
	return grpcfd.TransportCredentials(insecure.NewCredentials())
}

// Serve runs a gRPC server with ForwarderCredentials on a unix socket in a temporary directory;
// register adds its services. The server stops when the test ends.
func Serve(t testing.TB, register func(*grpc.Server)) *url.URL {
	t.Helper()
	return ServeWith(t, ForwarderCredentials(), register)
}

// ServeWith is Serve with creds.
func ServeWith(t testing.TB, creds credentials.TransportCredentials, register func(*grpc.Server)) *url.URL {
	t.Helper()
	listener, err := net.Listen("unix", filepath.Join(t.TempDir(), "grpcfd.sock"))
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	server := grpc.NewServer(grpc.Creds(creds))
	register(server)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = server.Serve(listener)
	}()
	t.Cleanup(func() {
		server.Stop()
		<-served
	})
	return &url.URL{Scheme: "unix", Path: listener.Addr().String()}
}

// Dial connects to u with NSMgrCredentials; the connection closes when the test ends.
func Dial(t testing.TB, u *url.URL) *grpc.ClientConn {
	t.Helper()
	return DialWith(t, u, NSMgrCredentials())
}

// DialWith is Dial with creds.
func DialWith(t testing.TB, u *url.URL, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(u.String(),
		grpc.WithTransportCredentials(creds),
		grpcfd.WithChainUnaryInterceptor(),
		grpcfd.WithChainStreamInterceptor(),
	)
	if err != nil {
		t.Fatalf("dialing %s: %v", u, err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// SendingClient sends every file:// URL of a mechanism as a file descriptor, as nsmgr does; more
// elements may come before the call.
func SendingClient(cc grpc.ClientConnInterface, more ...networkservice.NetworkServiceClient) networkservice.NetworkServiceClient {
	elements := append([]networkservice.NetworkServiceClient{sendfd.NewClient()}, more...)
	return chain.NewNetworkServiceClient(append(elements, networkservice.NewNetworkServiceClient(cc))...)
}
