package recvnetns

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// NewServer returns sdk's recvfd server between the two checks. Use it in place of
// recvfd.NewServer, before every element that opens a namespace.
func NewServer() networkservice.NetworkServiceServer {
	return chain.NewNetworkServiceServer(&wireServer{}, recvfd.NewServer(), &verifyServer{})
}

// wireServer records the inodes the Request names before recvfd rewrites them.
type wireServer struct{}

func (s *wireServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	ctx, record := withWireInodes(ctx)
	if err := record.record(requestMechanisms(request)); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "connection %s: %v", request.GetConnection().GetId(), err)
	}
	return next.Server(ctx).Request(ctx, request)
}

// Close is never refused; what it cannot verify, verifyServer keeps from being opened.
func (s *wireServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	ctx, record := withWireInodes(ctx)
	_ = record.record(connectionMechanism(conn))
	return next.Server(ctx).Close(ctx, conn)
}

// verifyServer lets through only the file:// URLs recvfd made of the recorded inodes.
type verifyServer struct{}

func (s *verifyServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if err := wireInodesFrom(ctx).verify(requestMechanisms(request)); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "connection %s: %v", request.GetConnection().GetId(), err)
	}
	return next.Server(ctx).Request(ctx, request)
}

func (s *verifyServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	named := connectionMechanism(conn)
	if err := wireInodesFrom(ctx).verify(named); err != nil {
		log.FromContext(ctx).Warnf("recvnetns: closing connection %s without opening its namespace: %v", conn.GetId(), err)
		defer wireInodesFrom(ctx).neutralize(named)()
	}
	return next.Server(ctx).Close(ctx, conn)
}

func connectionMechanism(conn *networkservice.Connection) []namedMechanism {
	if conn.GetMechanism() == nil {
		return nil
	}
	return []namedMechanism{{"mechanism", conn.GetMechanism()}}
}
