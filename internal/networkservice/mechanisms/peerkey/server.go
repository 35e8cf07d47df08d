package peerkey

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type peerKeyServer struct {
	vppConn api.Connection
}

// NewServer returns the element that rebuilds the client's side of an encrypted tunnel when the
// client comes with another key. Place it after sdk-vpp's wireguard and ipsec servers (behind the
// mechanisms element): it acts once the rest of the chain answered, before they build.
func NewServer(vppConn api.Connection) networkservice.NetworkServiceServer {
	return &peerKeyServer{vppConn: vppConn}
}

func (s *peerKeyServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := rebuildOnChange(ctx, s.vppConn, conn, false); err != nil {
		// What lies behind, the connection onward among it, granted the Request: it is closed
		// again, so that a failed Request leaves nothing granted, as sdk-vpp's elements do.
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		_, _ = next.Server(ctx).Close(closeCtx, conn)
		return nil, err
	}
	return conn, nil
}

func (s *peerKeyServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
