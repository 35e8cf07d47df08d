package journal

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// NewCreatedServer returns the element that records the VPP interfaces and veth ends the chain
// below it created, as soon as they exist, in the connection's intent: a forwarder that dies
// between their creation and the Request's commit leaves them named on disk, and the next run
// releases them (only an interface VPP still shows with its recorded tag is ever taken, see
// restore). sdk-vpp creates a side's interfaces on the way back, after the next hop answered, so
// the commit at the top comes only after every element above has programmed too. Place it right
// above sdk-vpp's tag element, which has tagged them by then.
func NewCreatedServer(j *Journal) networkservice.NetworkServiceServer {
	return &createdServer{journal: j}
}

// NewCreatedClient is NewCreatedServer's counterpart for the onward chain: it records the
// outgoing side's interfaces before the server half programs the client's side. Place it right
// above sdk-vpp's tag client.
func NewCreatedClient(j *Journal) networkservice.NetworkServiceClient {
	return &createdClient{journal: j}
}

type createdServer struct{ journal *Journal }

func (s *createdServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err == nil {
		s.journal.noteCreated(ctx, request.GetConnection().GetId(), false, conn)
	}
	return conn, err
}

func (s *createdServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

type createdClient struct{ journal *Journal }

func (c *createdClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err == nil {
		c.journal.noteCreated(ctx, request.GetConnection().GetId(), true, conn)
	}
	return conn, err
}

func (c *createdClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// noteCreated records into the intent of connection id the interfaces of one side that the
// record does not name yet. A failed write only costs this narrower crash window: the Request
// goes on, as it would without a journal.
func (j *Journal) noteCreated(ctx context.Context, id string, outgoing bool, conn *networkservice.Connection) {
	if j == nil {
		return
	}
	i, ok := sideInterface(ctx, outgoing, conn, j.committed(id))
	if !ok {
		return
	}
	if err := j.NoteCreating(id, i); err != nil {
		log.FromContext(ctx).Warnf("journal: recording what connection %s created: %v", id, err)
	}
}

// NoteCreating records into the intent of connection id an interface the chain creates, or is
// about to: from then on a crash leaves it named, and the next run releases what it can still
// prove to be it (see restore). Nothing is written when the record names it already or when no
// Request began on id.
func (j *Journal) NoteCreating(id string, i Interface) error {
	return j.noteInIntent(id,
		func(s *State) bool { return s.names(i) },
		func(rec *Record) {
			rec.Intent.Interfaces = append(withoutPending(rec.Intent.Interfaces, i), i)
			pruneNamespaces(rec)
		})
}

// noteInIntent adds to the intent of connection id what held says it lacks, unless the committed
// state or the intent holds it already or no Request began on id.
func (j *Journal) noteInIntent(id string, held func(*State) bool, add func(*Record)) error {
	if j == nil {
		return nil
	}
	e := j.lockedEntry(id)
	defer j.unlockEntry(id, e)
	if e.rec == nil || held(e.rec.Committed) || held(e.rec.Intent) {
		return nil
	}
	rec := e.record(id)
	if rec.Intent == nil && rec.Committed == nil {
		return nil
	}
	if rec.Intent == nil {
		// A refresh whose Begin found nothing new, yet the chain makes something new (sdk-vpp
		// re-creates an interface): the intent is the committed state plus it.
		rec.Intent = rec.Committed.clone()
	}
	add(rec)
	return j.store(e, rec)
}

// withoutPending drops the entry recorded for i's veth pair before the pair existed (its
// forwarder end by name and MAC only): i, made since, names the same pair in full.
func withoutPending(interfaces []Interface, i Interface) []Interface {
	if i.Peer == nil || i.Peer.Index == 0 {
		return interfaces
	}
	kept := interfaces[:0]
	for _, held := range interfaces {
		if held.Outgoing == i.Outgoing && held.Peer != nil && held.Peer.Index == 0 && held.Peer.Name == i.Peer.Name {
			continue
		}
		kept = append(kept, held)
	}
	return kept
}
