package peerkey

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type peerKeyClient struct {
	vppConn api.Connection
}

// NewClient returns the element that rebuilds the next hop's side of an encrypted tunnel when the
// next hop answers with another key. Place it after sdk-vpp's wireguard and ipsec clients: it acts
// on the answer before they build.
func NewClient(vppConn api.Connection) networkservice.NetworkServiceClient {
	return &peerKeyClient{vppConn: vppConn}
}

func (c *peerKeyClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if err := rebuildOnChange(ctx, c.vppConn, conn, true); err != nil {
		// The next hop granted the connection: it is closed again, as sdk-vpp's elements do on
		// their own failures.
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		_, _ = next.Client(ctx).Close(closeCtx, conn, opts...)
		return nil, err
	}
	return conn, nil
}

func (c *peerKeyClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}
