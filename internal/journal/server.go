package journal

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

type journalServer struct {
	journal *Journal
}

// NewServer returns a chain element that records each connection after a successful Request and
// forgets it on Close. Place it ahead of the elements that install kernel state, so that it sees
// the connection as they leave it, and behind sdk's metadata element (as in every endpoint chain),
// where the mechanism element leaves the VPP interface it made for the client. A journal write that fails is logged, not returned: the journal
// only serves a cleanup after a crash, and must not fail a connection that works.
func NewServer(j *Journal) networkservice.NetworkServiceServer {
	return &journalServer{journal: j}
}

func (s *journalServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	// The mechanism element behind stored the VPP side of the client's interface in this
	// connection's metadata.
	clientInterface, _ := ifindex.Load(ctx, false)
	if err := s.journal.RecordWithClientInterface(conn, clientInterface); err != nil {
		log.FromContext(ctx).Warnf("journal: %v", err)
	}
	return conn, nil
}

func (s *journalServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	// Forget even when the rest of Close fails: the kernel elements behind log their failures
	// instead of returning them, so an error here comes from elsewhere, and a record kept for it
	// would only replay this Close after the next restart.
	defer func() {
		if err := s.journal.Forget(conn.GetId()); err != nil {
			log.FromContext(ctx).Warnf("journal: %v", err)
		}
	}()
	return next.Server(ctx).Close(ctx, conn)
}
