package linkroutes

import (
	"context"
	stderrors "errors"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelmark"
)

type linkRoutesServer struct {
	protocol netlink.RouteProtocol
}

// NewServer returns the element; a drop-in for sdk-kernel's routes.NewServer(). Its routes carry
// kernelmark.Protocol, the mark restart cleanup looks for.
func NewServer() networkservice.NetworkServiceServer {
	return &linkRoutesServer{protocol: kernelmark.Protocol}
}

func (s *linkRoutesServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	// Reject a bad IP context before the rest of the chain creates anything for it.
	if _, err := desiredRoutes(request.GetConnection().GetContext().GetIpContext(), metadata.IsClient(s), 0, s.protocol); err != nil {
		return nil, err
	}
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := reconcile(ctx, conn, metadata.IsClient(s), s.protocol); err != nil {
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
	// The rest of the chain closes whatever happened here; the error goes up so that the journal
	// keeps the connection for a retried cleanup.
	removeErr := removeAll(conn, s.protocol)
	if _, gone := errors.Cause(removeErr).(netlink.LinkNotFoundError); gone {
		removeErr = nil // its routes went with it
	}
	if removeErr != nil {
		log.FromContext(ctx).Warnf("linkroutes: %v", removeErr)
	}
	_, err := next.Server(ctx).Close(ctx, conn)
	if err = stderrors.Join(removeErr, err); err != nil {
		return nil, err
	}
	return &empty.Empty{}, nil
}
