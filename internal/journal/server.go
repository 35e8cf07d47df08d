package journal

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

type journalServer struct {
	journal *Journal
}

// NewServer returns a chain element that records each connection after a successful Request and
// forgets it on Close. Place it ahead of the elements that install kernel state, so that it sees
// the connection as they leave it. A journal write that fails is logged, not returned: the journal
// only serves a cleanup after a crash, and must not fail a connection that works.
func NewServer(j *Journal) networkservice.NetworkServiceServer {
	return &journalServer{journal: j}
}

func (s *journalServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := s.journal.Record(conn); err != nil {
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
