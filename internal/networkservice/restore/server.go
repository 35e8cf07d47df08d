package restore

import (
	"context"
	"errors"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
)

type restoreServer struct {
	leftovers *Leftovers
}

// NewServer returns the element that hands a connection requested again after a restart what the
// previous run left for it: the client's side is adopted when it is exactly what the Request asks
// for, and released otherwise before the mechanism elements build it again (NewClient does the same
// for the next hop's side once it answered). The leftover is dropped only once the Request
// succeeded; a failed one gives it back, for its grace period or a Close to release. A Close of a
// connection that still has a leftover releases it.
//
// Place it behind recvfd, which hands the chain the client's namespace, and before every element
// that creates interfaces.
func NewServer(leftovers *Leftovers) networkservice.NetworkServiceServer {
	return &restoreServer{leftovers: leftovers}
}

type claimKey struct{}

func (s *restoreServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	lo := s.leftovers.claim(request.GetConnection())
	if lo == nil {
		return next.Server(ctx).Request(ctx, request)
	}
	s.leftovers.adopter.side(ctx, lo.rec, request.GetConnection(), false)
	metadata.Map(ctx, false).Store(claimKey{}, lo)
	conn, err := next.Server(ctx).Request(ctx, request)
	metadata.Map(ctx, false).Delete(claimKey{})
	if err != nil {
		s.leftovers.unclaim(lo)
		return nil, err
	}
	s.leftovers.settle(ctx, lo, conn.GetId())
	return conn, nil
}

func (s *restoreServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	var releaseErr error
	if lo := s.leftovers.claim(conn); lo != nil {
		releaseErr = s.leftovers.release(ctx, lo)
	}
	_, err := next.Server(ctx).Close(ctx, conn)
	return &empty.Empty{}, errors.Join(err, releaseErr)
}

// claimed is the leftover the Request in ctx claimed, if any.
func claimed(ctx context.Context) *leftover {
	if value, ok := metadata.Map(ctx, false).Load(claimKey{}); ok {
		return value.(*leftover)
	}
	return nil
}
