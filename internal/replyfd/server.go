package replyfd

import (
	"context"
	"path"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type replyFDServer struct {
	sendfd networkservice.NetworkServiceServer
}

// NewServer returns the element. Use it in place of sendfd.NewServer.
func NewServer() networkservice.NetworkServiceServer {
	return &replyFDServer{sendfd: sendfd.NewServer()}
}

func (s *replyFDServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return s.sendfd.Request(ctx, request)
}

// Close sends descriptors only with the answer to a Close call: the RPC the context belongs to
// says which call it is, and a Close the forwarder issues itself carries the Request's.
func (s *replyFDServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	if method, ok := grpc.Method(ctx); ok && path.Base(method) == "Close" {
		return s.sendfd.Close(ctx, conn)
	}
	return next.Server(ctx).Close(ctx, conn)
}
