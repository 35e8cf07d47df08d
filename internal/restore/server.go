package restore

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type restoreServer struct {
	leftovers *Leftovers
}

// NewServer returns a chain element that claims a connection's leftovers from a previous run
// before the rest of the chain builds the connection again (see Leftovers.Claim), and releases
// them all when the connection is closed. Place it before the mechanism elements: the old tap or
// veth would otherwise collide with the new one.
func NewServer(leftovers *Leftovers) networkservice.NetworkServiceServer {
	return &restoreServer{leftovers: leftovers}
}

func (s *restoreServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	s.leftovers.Claim(ctx, connectionIDs(request.GetConnection())...)
	return next.Server(ctx).Request(ctx, request)
}

func (s *restoreServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	s.leftovers.ReleaseOwned(ctx, connectionIDs(conn)...)
	return next.Server(ctx).Close(ctx, conn)
}

// connectionIDs are every ID a previous run may have named this connection by: VPP tags carry
// the ID of the forwarder's own segment (incoming side) or the next one (outgoing side), veth
// aliases carry the first segment's.
func connectionIDs(conn *networkservice.Connection) []string {
	ids := []string{conn.GetId()}
	for _, segment := range conn.GetPath().GetPathSegments() {
		ids = append(ids, segment.GetId())
	}
	return ids
}
