package requestcheck

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type requestCheckServer struct{}

// NewServer returns the element. Place it before every element that creates resources.
func NewServer() networkservice.NetworkServiceServer {
	return &requestCheckServer{}
}

func (s *requestCheckServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if err := check(request); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "connection %s: %v", request.GetConnection().GetId(), err)
	}
	return next.Server(ctx).Request(ctx, request)
}

// Close is never refused: whatever was accepted must stay removable.
func (s *requestCheckServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
