package linkroutes

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type linkRoutesClient struct {
	*linkRoutes
}

// NewClient returns the element for the endpoint's namespace, on the client half of the cross-connect; a
// drop-in for sdk-kernel's routes.NewClient(), which only ever adds.
func NewClient(opts ...Option) networkservice.NetworkServiceClient {
	return &linkRoutesClient{newLinkRoutes(true, "linkroutes-client/", opts)}
}

func (c *linkRoutesClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	if err := c.validate(request.GetConnection()); err != nil {
		return nil, err
	}
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.reconcile(ctx, conn); err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := c.Close(closeCtx, conn, opts...); closeErr != nil {
			err = errors.Wrapf(err, "connection closed with error: %s", closeErr.Error())
		}
		return nil, err
	}
	return conn, nil
}

func (c *linkRoutesClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	removeErr := c.removeAll(ctx, conn)
	_, err := next.Client(ctx).Close(ctx, conn, opts...)
	return closed(ctx, removeErr, err)
}
