package requestcheck

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type requestCheckServer struct {
	limits Limits
}

// NewServer returns the element. Place it first, before every element that acts on a Request.
func NewServer(opts ...Option) networkservice.NetworkServiceServer {
	o := &options{limits: DefaultLimits()}
	for _, opt := range opts {
		opt(o)
	}
	return &requestCheckServer{limits: o.limits}
}

func (s *requestCheckServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if err := check(request, &s.limits); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "connection %s: %v", connectionName(request.GetConnection().GetId()), err)
	}
	return next.Server(ctx).Request(ctx, request)
}

// Close is never refused: whatever was accepted must stay removable.
func (s *requestCheckServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
