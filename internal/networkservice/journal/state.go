package journal

import (
	"slices"
	"strings"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
)

// Begin records, before the chain programs anything, that a Request for the connection id is
// about to program conn: an intent, written only when conn names something the record does not
// hold yet, so that a refresh writes nothing. It also stops a cleanup retried for an earlier Close
// of id.
func (j *Journal) Begin(id string, conn *networkservice.Connection) error {
	if j == nil {
		return nil
	}
	e := j.lockedEntry(id)
	defer j.unlockEntry(id, e)
	rec := e.record(id)
	incoming, err := normalize(rec, conn)
	if err != nil {
		return err
	}
	if rec.Committed == nil || !proto.Equal(rec.Committed.Incoming, incoming) {
		if rec.Intent == nil || !proto.Equal(rec.Intent.Incoming, incoming) {
			rec.Intent = &State{Incoming: incoming}
			if err := j.store(e, rec); err != nil {
				return err
			}
		}
	}
	// Only a Begin that took hold stops a retried cleanup: one that failed programmed nothing.
	e.generation++
	return nil
}

// Intend completes the intent of the connection id once its next hop answered with outgoing,
// before either side's interfaces and kernel state are programmed: it names the outgoing side and
// the IP context both sides will get. Nothing is written when the result is what was committed.
func (j *Journal) Intend(id string, outgoing *networkservice.Connection) error {
	if j == nil {
		return nil
	}
	e := j.lockedEntry(id)
	defer j.unlockEntry(id, e)
	rec := e.record(id)
	out, err := normalize(rec, outgoing)
	if err != nil {
		return err
	}
	var incoming *networkservice.Connection
	switch {
	case rec.Intent != nil:
		incoming = rec.Intent.Incoming.Clone()
	case rec.Committed != nil:
		incoming = rec.Committed.Incoming.Clone()
	default:
		return errors.Errorf("journal: no Request began on connection %s", id)
	}
	incoming.Context = out.GetContext()
	if rec.Committed != nil && proto.Equal(rec.Committed.Incoming, incoming) && proto.Equal(rec.Committed.Outgoing, out) {
		rec.Intent = nil
	} else {
		rec.Intent = &State{Incoming: incoming, Outgoing: out}
	}
	pruneNamespaces(rec)
	return j.store(e, rec)
}

// Commit records that the chain completed the connection id: its incoming and outgoing connections
// as they are now, and what the forwarder holds for them: its interfaces and the bridge domains
// they are members of. The intent is cleared.
func (j *Journal) Commit(id string, incoming, outgoing *networkservice.Connection, interfaces []Interface, bridgeDomains ...uint32) error {
	if j == nil {
		return nil
	}
	e := j.lockedEntry(id)
	defer j.unlockEntry(id, e)
	rec := e.record(id)
	in, err := normalize(rec, incoming)
	if err != nil {
		return err
	}
	out, err := normalize(rec, outgoing)
	if err != nil {
		return err
	}
	rec.Superseded = supersededBy(rec, interfaces, bridgeDomains)
	rec.Committed = &State{Incoming: in, Outgoing: out, Interfaces: interfaces, BridgeDomains: bridgeDomains}
	rec.Intent = nil
	pruneNamespaces(rec)
	if err = j.store(e, rec); err != nil {
		return err
	}
	e.committedHere = true
	return nil
}

// ClearSuperseded forgets the superseded states of connection id once they were released.
func (j *Journal) ClearSuperseded(id string) error {
	if j == nil {
		return nil
	}
	e := j.lockedEntry(id)
	defer j.unlockEntry(id, e)
	if e.rec == nil || len(e.rec.Superseded) == 0 {
		return nil
	}
	rec := e.record(id)
	rec.Superseded = nil
	pruneNamespaces(rec)
	return j.store(e, rec)
}

// supersededBy is every interface and bridge domain rec's states name that interfaces and
// bridgeDomains, about to be committed, no longer hold, kept with the state that named it. An
// interface is still held when the new ones have its VPP index or its veth end.
func supersededBy(rec *Record, interfaces []Interface, bridgeDomains []uint32) []*State {
	var superseded []*State
	for _, s := range rec.InterfaceStates() {
		var gone []Interface
		for _, i := range s.Interfaces {
			if (i.SwIfIndex != 0 || i.Peer != nil) && !stillHeld(i, interfaces) {
				gone = append(gone, i)
			}
		}
		var goneBridges []uint32
		for _, bd := range s.BridgeDomains {
			if !slices.Contains(bridgeDomains, bd) && !slices.Contains(goneBridges, bd) {
				goneBridges = append(goneBridges, bd)
			}
		}
		if len(gone) > 0 || len(goneBridges) > 0 {
			superseded = append(superseded, &State{Incoming: s.Incoming, Outgoing: s.Outgoing, Interfaces: gone, BridgeDomains: goneBridges})
		}
	}
	return superseded
}

func stillHeld(i Interface, interfaces []Interface) bool {
	for _, held := range interfaces {
		if i.SwIfIndex != 0 && held.SwIfIndex == i.SwIfIndex {
			return true
		}
		if i.Peer != nil && held.Peer != nil && held.Peer.Name == i.Peer.Name {
			return true
		}
	}
	return false
}

// record is a copy of the entry's record to change, or a new one.
func (e *entry) record(id string) *Record {
	if e.rec != nil {
		return e.rec.Clone()
	}
	return &Record{ID: id, Namespaces: map[string]netnsid.Identity{}}
}

// normalize strips conn and, for a kernel mechanism naming its namespace by a file (what recvfd
// hands the chain), names it by inode URL instead and records the namespace's identity: the file
// dies with this run, the identity lets the next one find the namespace again, or know it is gone.
func normalize(rec *Record, conn *networkservice.Connection) (*networkservice.Connection, error) {
	stripped := strip(conn)
	mechanism := kernel.ToMechanism(stripped.GetMechanism())
	if mechanism == nil || !strings.HasPrefix(mechanism.GetNetNSURL(), "file://") {
		return stripped, nil
	}
	id, err := netnsid.OfURL(mechanism.GetNetNSURL())
	if err != nil {
		return nil, errors.Wrapf(err, "journal: connection %s", conn.GetId())
	}
	rec.Namespaces[id.InodeURL()] = id
	mechanism.SetNetNSURL(id.InodeURL())
	return stripped, nil
}

// pruneNamespaces drops the identities no state or interface names any more.
func pruneNamespaces(rec *Record) {
	used := map[string]bool{}
	for _, s := range rec.InterfaceStates() {
		for _, conn := range []*networkservice.Connection{s.Incoming, s.Outgoing} {
			if mechanism := kernel.ToMechanism(conn.GetMechanism()); mechanism != nil {
				used[mechanism.GetNetNSURL()] = true
			}
		}
		for _, i := range s.Interfaces {
			if i.Link != nil {
				used[i.Link.Netns] = true
			}
		}
	}
	for url := range rec.Namespaces {
		if !used[url] {
			delete(rec.Namespaces, url)
		}
	}
}
