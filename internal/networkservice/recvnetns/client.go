package recvnetns

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

// NewClient returns sdk's recvfd client behind the check of the connection the next hop returns.
// Use it in place of recvfd.NewClient, after every element that opens a namespace, and
// NewWireClient last, after sendfd's client.
func NewClient() networkservice.NetworkServiceClient {
	return chain.NewNetworkServiceClient(&verifyClient{}, recvfd.NewClient())
}

// NewWireClient returns the element that records the namespaces the next hop's connection names
// as it arrives. It must come after sendfd's client, which turns a namespace it sent and gets back
// into the file:// URL it sent (on a refresh: the descriptor recvfd received before).
func NewWireClient() networkservice.NetworkServiceClient {
	return &wireClient{}
}

// verifyClient refuses a returned connection whose namespace recvfd did not receive, and closes it
// on the next hop.
type verifyClient struct{}

func (c *verifyClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	closeCtxFunc := postpone.ContextWithValues(ctx)
	ctx, record := withWireInodes(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if err := record.verify(connectionMechanism(conn)); err != nil {
		closeCtx, cancel := closeCtxFunc()
		defer cancel()
		// Without the namespace it named: sendfd would open that path and send it to the next hop.
		refused := conn.Clone()
		delete(refused.GetMechanism().GetParameters(), common.InodeURL)
		if _, closeErr := next.Client(ctx).Close(closeCtx, refused, opts...); closeErr != nil {
			log.FromContext(ctx).Warnf("recvnetns: closing the refused connection %s on the next hop: %v", conn.GetId(), closeErr)
		}
		return nil, errors.Errorf("connection %s: the next hop's %v", conn.GetId(), err)
	}
	return conn, nil
}

// Close passes: the connection it closes is the one verified on Request.
func (c *verifyClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// wireClient records the inode the next hop's connection names before recvfd rewrites it.
type wireClient struct{}

func (c *wireClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	// A malformed URL is left unrecorded, and verifyClient refuses it.
	if record := wireInodesFrom(ctx); record != nil {
		_ = record.record(connectionMechanism(conn))
	}
	return conn, nil
}

func (c *wireClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}
