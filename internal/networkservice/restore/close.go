package restore

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type closeServer struct {
	leftovers *Leftovers
	// release is authorize, then releaseOnClose.
	release networkservice.NetworkServiceServer
}

// NewCloseServer returns the element that releases a previous run's connection when its Close
// arrives. sdk's begin drops the Close of a connection this run never established, so NewServer,
// behind it, never sees it: place this element after updatepath (which names the connection by
// this forwarder's segment) and ahead of begin, or beside the endpoint on a copy of each Close.
//
// The Close releases the leftover only once authorize, the endpoint's own authorization, let it
// through, and under the connection's lock (see Leftovers.SerializeWith). It passes nothing on: a
// connection with a leftover has no state in the rest of the chain. The previous run's next hop
// hears of it apart (Leftovers.CloseNextHopsWith).
func NewCloseServer(leftovers *Leftovers, authorize networkservice.NetworkServiceServer) networkservice.NetworkServiceServer {
	return &closeServer{leftovers: leftovers, release: chain.NewNetworkServiceServer(authorize, &releaseOnClose{leftovers: leftovers})}
}

func (s *closeServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(ctx, request)
}

func (s *closeServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	if !s.leftovers.waiting(conn) {
		return &empty.Empty{}, nil
	}
	return s.release.Close(ctx, conn)
}

// releaseOnClose releases the leftover of an authorized Close.
type releaseOnClose struct {
	leftovers *Leftovers
}

func (r *releaseOnClose) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(ctx, request)
}

func (r *releaseOnClose) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	var err error
	r.leftovers.serialized(conn.GetId(), func() {
		if lo := r.leftovers.claim(conn); lo != nil {
			err = r.leftovers.release(ctx, lo)
			r.leftovers.closeNextHopOf(ctx, recordedNextHop(lo.rec.Committed.GetOutgoing(), conn, conn.GetPath().GetIndex()))
		}
	})
	return &empty.Empty{}, err
}
