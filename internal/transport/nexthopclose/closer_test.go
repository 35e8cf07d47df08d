package nexthopclose_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/common/memory"
	"github.com/networkservicemesh/sdk/pkg/registry/core/adapters"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/nexthopclose"
)

// endpoint records the Closes it is sent.
type endpoint struct {
	closes chan *networkservice.Connection
}

func (e *endpoint) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return request.GetConnection(), nil
}

func (e *endpoint) Close(_ context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	e.closes <- conn
	return &empty.Empty{}, nil
}

// serveEndpoint serves an endpoint on a unix socket and registers it as name.
func serveEndpoint(t *testing.T, nses registry.NetworkServiceEndpointRegistryServer, name string) *endpoint {
	t.Helper()
	socket := filepath.Join(t.TempDir(), name+".sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	e := &endpoint{closes: make(chan *networkservice.Connection, 1)}
	server := grpc.NewServer()
	networkservice.RegisterNetworkServiceServer(server, e)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	_, err = nses.Register(context.Background(), &registry.NetworkServiceEndpoint{Name: name, NetworkServiceNames: []string{"svc"}, Url: "unix://" + socket})
	require.NoError(t, err)
	return e
}

// The Close reaches the endpoint the connection names, not another one of its service.
func TestTheCloseReachesTheNamedEndpoint(t *testing.T) {
	nses := memory.NewNetworkServiceEndpointRegistryServer()
	old := serveEndpoint(t, nses, "nse-1")
	other := serveEndpoint(t, nses, "nse-2")
	closeAt := nexthopclose.New(adapters.NetworkServiceEndpointServerToClient(nses), time.Second,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn := &networkservice.Connection{Id: "fwd-conn-1", NetworkServiceEndpointName: "nse-1", Path: &networkservice.Path{Index: 1,
		PathSegments: []*networkservice.PathSegment{{Name: "nsc", Id: "nsc-1"}, {Name: "forwarder", Id: "fwd-conn-1"}, {Name: "nse-1", Id: "nse-1-conn"}}}}

	require.NoError(t, closeAt(context.Background(), conn))

	select {
	case got := <-old.closes:
		require.Equal(t, "nse-1-conn", got.GetPath().GetPathSegments()[2].GetId())
	default:
		t.Fatal("nse-1 got no Close")
	}
	require.Empty(t, other.closes, "another endpoint of the service got the Close")
}

// An endpoint that is gone from the registry is an error that names it, after no dial.
func TestAnUnregisteredEndpointIsAnError(t *testing.T) {
	closeAt := nexthopclose.New(adapters.NetworkServiceEndpointServerToClient(memory.NewNetworkServiceEndpointRegistryServer()), time.Second,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	err := closeAt(context.Background(), &networkservice.Connection{Id: "fwd-conn-1", NetworkServiceEndpointName: "nse-gone"})
	require.ErrorContains(t, err, "endpoint nse-gone is not registered")
}
