package xconnect_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
)

// nsmgr reaches a forwarder as nsmgr does: over gRPC on a unix socket, passing the namespaces a
// Request names by file:// URL as file descriptors. The next hop it has chosen travels from the
// caller's context (clienturlctx) to the forwarder's in the call's metadata.
type nsmgr struct {
	sending networkservice.NetworkServiceClient
	// raw sends a Request as it is, file:// URLs included: a hostile nsmgr.
	raw networkservice.NetworkServiceClient
}

func (n *nsmgr) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return n.sending.Request(ctx, request)
}

func (n *nsmgr) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return n.sending.Close(ctx, conn)
}

// serveForwarder serves forwarder for the test with the forwarder's own descriptor-passing
// transport, and returns the nsmgr that reaches it with grpcfd, as a stock nsmgr does.
func serveForwarder(t *testing.T, forwarder endpoint.Endpoint) *nsmgr {
	t.Helper()
	return serveForwarderOver(t, forwarder, recvnetnstest.ForwarderCredentials(), recvnetnstest.NSMgrCredentials())
}

// serveForwarderOver is serveForwarder with the transports of both ends.
func serveForwarderOver(t *testing.T, forwarder endpoint.Endpoint, forwarderCreds, nsmgrCreds credentials.TransportCredentials) *nsmgr {
	t.Helper()
	u := recvnetnstest.ServeWith(t, forwarderCreds, func(server *grpc.Server) {
		networkservice.RegisterNetworkServiceServer(server, next.NewNetworkServiceServer(&nextHopFromMetadata{}, forwarder))
		networkservice.RegisterMonitorConnectionServer(server, forwarder)
	})
	cc := recvnetnstest.DialWith(t, u, nsmgrCreds)
	return &nsmgr{
		sending: recvnetnstest.SendingClient(cc, &nextHopToMetadata{}),
		raw:     chain.NewNetworkServiceClient(&nextHopToMetadata{}, networkservice.NewNetworkServiceClient(cc)),
	}
}

const nextHopKey = "x-test-next-hop"

type nextHopToMetadata struct{}

func (c *nextHopToMetadata) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	return next.Client(ctx).Request(withNextHop(ctx), request, opts...)
}

func (c *nextHopToMetadata) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(withNextHop(ctx), conn, opts...)
}

func withNextHop(ctx context.Context) context.Context {
	if u := clienturlctx.ClientURL(ctx); u != nil {
		return metadata.AppendToOutgoingContext(ctx, nextHopKey, u.String())
	}
	return ctx
}

type nextHopFromMetadata struct{}

func (s *nextHopFromMetadata) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(nextHopOf(ctx), request)
}

func (s *nextHopFromMetadata) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(nextHopOf(ctx), conn)
}

func nextHopOf(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	if values := md.Get(nextHopKey); len(values) == 1 {
		if u, err := url.Parse(values[0]); err == nil {
			return clienturlctx.WithClientURL(ctx, u)
		}
	}
	return ctx
}
