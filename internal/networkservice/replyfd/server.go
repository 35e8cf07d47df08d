package replyfd

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

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

// Request is sendfd's: nsmgr's recvfd client waits for the descriptor of the namespace the
// returned connection names.
func (s *replyFDServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return s.sendfd.Request(ctx, request)
}

func (s *replyFDServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
