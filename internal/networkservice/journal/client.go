package journal

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type journalClient struct {
	journal *Journal
}

// NewClient returns the element of the onward chain that completes a connection's intent once the
// next hop answered: the outgoing connection and the IP context are recorded before either side's
// interfaces, addresses, routes or rules are programmed. Place it behind every element that
// programs the outgoing side (the mechanisms) and behind recvfd, which names the endpoint's namespace.
func NewClient(j *Journal) networkservice.NetworkServiceClient {
	return &journalClient{journal: j}
}

type outgoingKey struct{}

func (c *journalClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	// The onward chain names the connection by the forwarder's own path segment, as the server does.
	id := request.GetConnection().GetId()
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.journal.Intend(id, conn); err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		_, _ = next.Client(ctx).Close(closeCtx, conn, opts...)
		return nil, status.Errorf(codes.Unavailable, "connection %s: the forwarder could not record its intent: %v", id, err)
	}
	metadata.Map(ctx, true).Store(outgoingKey{}, conn.Clone())
	return conn, nil
}

func (c *journalClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// loadOutgoing is the outgoing connection as the onward chain last saw it answered.
func loadOutgoing(ctx context.Context) *networkservice.Connection {
	if value, ok := metadata.Map(ctx, true).Load(outgoingKey{}); ok {
		return value.(*networkservice.Connection)
	}
	return nil
}
