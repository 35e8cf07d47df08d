package journal

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

type journalServer struct {
	ctx     context.Context
	journal *Journal
	cleanup Cleanup
}

// NewServer returns the chain element that keeps the journal ahead of the data plane: before the
// rest of the chain programs anything, the connection's intent is recorded (a Request whose intent
// cannot be written fails untouched); NewClient completes the intent once the next hop answered;
// after success, what the forwarder holds for the connection is committed. Place it behind recvfd,
// which hands the chain the client's namespace, and ahead of every element that programs.
//
// A Close that returns an error, or a first Request that fails, keeps the record, and cleanup
// releases what it names, retried with backoff until it succeeds (see Journal.Retire); ctx bounds
// the retries. Without cleanup the record is kept for the next run.
func NewServer(ctx context.Context, j *Journal, cleanup Cleanup) networkservice.NetworkServiceServer {
	return &journalServer{ctx: ctx, journal: j, cleanup: cleanup}
}

func (s *journalServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	id := request.GetConnection().GetId()
	if err := s.journal.Begin(id, intended(request)); err != nil {
		return nil, status.Errorf(codes.Unavailable, "connection %s: nothing programmed, the forwarder could not record its intent: %v", id, err)
	}
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		if rec := s.journal.Lookup(id); rec != nil && rec.Committed == nil {
			// A first Request that failed: what it programmed is released, or the record stays.
			s.retire(ctx, id)
		}
		return nil, err
	}
	outgoing := loadOutgoing(ctx)
	interfaces := collectInterfaces(ctx, conn, outgoing, s.journal.committed(id))
	if err := s.journal.Commit(id, conn, outgoing, interfaces, loadBridgeDomains(ctx)...); err != nil {
		// The intent still names everything: a crash now costs a rebuild, not a leak.
		log.FromContext(ctx).Warnf("journal: %v", err)
	}
	s.releaseSuperseded(ctx, id)
	return conn, nil
}

// releaseSuperseded releases the interfaces of earlier states that the last commit no longer
// names (see Record.Superseded), and then forgets them. It says whether none is left. A failed
// release keeps them recorded: the next commit, Close or restart tries again.
func (s *journalServer) releaseSuperseded(ctx context.Context, id string) bool {
	// Only the superseded states: the connection's own kernel state is the live one.
	superseded := s.journal.superseded(id)
	if superseded == nil {
		return true
	}
	if s.cleanup == nil {
		return false
	}
	if err := s.cleanup(ctx, superseded); err != nil {
		log.FromContext(ctx).Warnf("journal: releasing what connection %s no longer uses: %v", id, err)
		return false
	}
	if err := s.journal.ClearSuperseded(id); err != nil {
		log.FromContext(ctx).Warnf("journal: %v", err)
	}
	return true
}

func (s *journalServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	_, err := next.Server(ctx).Close(ctx, conn)
	if err != nil {
		log.FromContext(ctx).Warnf("journal: closing connection %s failed, its record is kept for a retried release: %v", conn.GetId(), err)
		s.retire(ctx, conn.GetId())
		return &empty.Empty{}, err
	}
	if !s.releaseSuperseded(ctx, conn.GetId()) {
		s.retire(ctx, conn.GetId())
		return &empty.Empty{}, nil
	}
	if forgetErr := s.journal.Forget(conn.GetId()); forgetErr != nil {
		log.FromContext(ctx).Warnf("journal: %v", forgetErr)
	}
	return &empty.Empty{}, nil
}

// intended is the connection a Request is about to program. A client's first Request names its
// kernel interface only among its mechanism preferences (the mechanism element picks one later):
// the intent names the first kernel one, so that its namespace and interface are on disk before
// anything is programmed there.
func intended(request *networkservice.NetworkServiceRequest) *networkservice.Connection {
	conn := request.GetConnection()
	if conn.GetMechanism() != nil {
		return conn
	}
	for _, preference := range request.GetMechanismPreferences() {
		if preference.GetType() == kernel.MECHANISM {
			conn = conn.Clone()
			conn.Mechanism = preference.Clone()
			return conn
		}
	}
	return conn
}

func (s *journalServer) retire(ctx context.Context, id string) {
	if s.cleanup == nil {
		return
	}
	retireCtx := log.WithLog(s.ctx, log.FromContext(ctx))
	_ = s.journal.Retire(retireCtx, id, s.cleanup)
}
