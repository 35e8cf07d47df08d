package nexthopconn

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/clientconn"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

type nextHopConnClient struct {
	chainCtx context.Context
	o        *options
}

// NewClient returns the element, for the place of sdk's dial in a client chain (after metadata,
// before connect). Its connections close when chainCtx is done.
func NewClient(chainCtx context.Context, opts ...Option) networkservice.NetworkServiceClient {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	return &nextHopConnClient{chainCtx: chainCtx, o: o}
}

func (c *nextHopConnClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	closeCtxFunc := postpone.ContextWithValues(ctx)
	target := clienturlctx.ClientURL(ctx)
	if target == nil {
		return next.Client(ctx).Request(ctx, request, opts...)
	}
	stored, loaded := clientconn.LoadOrStore(ctx, newKeptConn(c.chainCtx, c.o))
	kept, ok := stored.(*keptConn)
	if !ok {
		return next.Client(ctx).Request(ctx, request, opts...)
	}
	if previous := kept.dialledTo(); previous != nil && previous.String() != target.String() {
		// Another next hop: the path through the old one is closed first.
		closeCtx, cancel := closeCtxFunc()
		defer cancel()
		if err := kept.ensure(closeCtx, previous); err != nil {
			log.FromContext(ctx).Errorf("can not redial to %v, err %v. Deleting clientconn...", previous, err)
			_ = kept.close()
			clientconn.Delete(ctx)
			return nil, err
		}
		_, _ = next.Client(ctx).Close(clienturlctx.WithClientURL(closeCtx, previous), request.GetConnection(), opts...)
	}
	if err := kept.ensure(ctx, target); err != nil {
		log.FromContext(ctx).Errorf("Can not dial to %v", target)
		c.forgetNew(ctx, kept, loaded)
		return nil, err
	}
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		c.forgetNew(ctx, kept, loaded)
		return nil, err
	}
	return conn, nil
}

// forgetNew drops a connection made for a first Request that failed; an established connection's
// failed refresh keeps it, as sdk's dial does.
func (c *nextHopConnClient) forgetNew(ctx context.Context, kept *keptConn, loaded bool) {
	if !loaded {
		_ = kept.close()
		clientconn.Delete(ctx)
	}
}

func (c *nextHopConnClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	stored, _ := clientconn.Load(ctx)
	kept, ok := stored.(*keptConn)
	if !ok {
		return next.Client(ctx).Close(ctx, conn, opts...)
	}
	defer func() {
		_ = kept.close()
		clientconn.Delete(ctx)
	}()
	target := clienturlctx.ClientURL(ctx)
	if target == nil {
		target = kept.dialledTo()
	}
	if target != nil {
		if err := kept.ensure(ctx, target); err != nil {
			log.FromContext(ctx).Errorf("dial failed: %v", err)
		}
	}
	// Called whatever the connection's state: this side's resources are released either way.
	return next.Client(ctx).Close(ctx, conn, opts...)
}
