package expiry

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
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
		// A failed refresh leaves the previous, still programmed state and its expiry (or the
		// retries of its release) in force.
		return nil, err
	}
	s.arm(ctx, id, state, conn)
	return conn, nil
}

// Close of a connection that fails is retried like a release at expiry: what stopped it (a
// descriptor the peer died before sending, a next hop that refused) may have kept the elements
// that release from running.
func (s *expiryServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	id := conn.GetId()
	state := s.lock(id)
	defer s.unlock(id, state)
	s.disarm(state)
	if _, err := next.Server(ctx).Close(ctx, conn); err != nil {
		if !s.options.released(id) {
			delay := s.options.retryDelay(0)
			log.FromContext(ctx).WithField("expiry", "close").Warnf("closing connection %s failed, its release is tried again in %s: %v", id, delay, err)
			s.schedule(ctx, id, state, conn, delay, 1)
		}
		return nil, err
	}
	return &empty.Empty{}, nil
}
