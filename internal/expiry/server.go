package expiry

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type expiryServer struct {
	chainCtx context.Context
	options  *options
	*registry
}

// NewServer returns the element. Place it after authorize (any position in the endpoint's
// additional functionality does) and before the elements whose resources it must release.
func NewServer(chainCtx context.Context, opts ...Option) networkservice.NetworkServiceServer {
	o := defaultOptions()
	for _, opt := range opts {
		opt(o)
	}
	if o.locks == nil {
		o.locks = NewLocks()
	}
	return &expiryServer{chainCtx: chainCtx, options: o, registry: &o.locks.registry}
}

func (s *expiryServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	id := request.GetConnection().GetId()
	state := s.lock(id)
	defer s.unlock(id, state)

	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		// A failed refresh leaves the previous, still programmed state and its expiry in force.
		return nil, err
	}
	s.arm(ctx, id, state, conn)
	return conn, nil
}

func (s *expiryServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	id := conn.GetId()
	state := s.lock(id)
	defer s.unlock(id, state)

	s.disarm(state)
	return next.Server(ctx).Close(ctx, conn)
}
