package linkroutes

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type linkRoutesServer struct {
	*linkRoutes
}

// NewServer returns the element for the client's namespace; a drop-in for sdk-kernel's routes.NewServer().
// Its routes carry routeview.ForwarderProtocol, the mark restart cleanup looks for.
func NewServer(opts ...Option) networkservice.NetworkServiceServer {
	return &linkRoutesServer{newLinkRoutes(false, "linkroutes-server/", opts)}
}

func (s *linkRoutesServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if err := s.validate(request.GetConnection()); err != nil {
		return nil, err
	}
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := s.reconcile(ctx, conn); err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := s.Close(closeCtx, conn); closeErr != nil {
			err = errors.Wrapf(err, "connection closed with error: %s", closeErr.Error())
		}
		return nil, err
	}
	return conn, nil
}

func (s *linkRoutesServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	removeErr := s.removeAll(ctx, conn)
	_, err := next.Server(ctx).Close(ctx, conn)
	return closed(ctx, removeErr, err)
}
