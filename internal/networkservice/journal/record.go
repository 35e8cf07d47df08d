package journal

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
)

// formatVersion is written in every record; a record of another version is unreadable.
const formatVersion = 2

// Record is what the journal holds about one connection of this forwarder, keyed by the ID of the
// forwarder's own path segment.
type Record struct {
	ID string
	// Committed is the connection as the chain last completed it: nil until a Request succeeded.
	Committed *State
	// Intent is what a Request in progress programs, or what a failed one may have left: set before
	// the chain programs anything that Committed does not already name, cleared by the next commit.
	Intent *State
	// Superseded are earlier states' interfaces that a commit no longer names and that may still
	// exist: a Request that built a side anew while the old side's interfaces were left (its
	// metadata lost to a failure above the journal, say). Each keeps its state's connections, which
	// say what kind of interface the side had. The journal server releases them after the commit.
	Superseded []*State
	// Namespaces are the identities of the namespaces the states name, by their inode URL. A
	// namespace without an identity here is never acted on after a restart.
	Namespaces map[string]netnsid.Identity
}

// State is one version of a connection: both of its sides, and what the forwarder created for them.
type State struct {
	// Incoming is the connection toward the client, Outgoing the one toward the next hop (nil until
	// the next hop answered). Both are stripped to what a cleanup or an adoption reads.
	Incoming, Outgoing *networkservice.Connection
	// Interfaces are the data-plane objects the chain had for each side when the state was committed.
	Interfaces []Interface
	// BridgeDomains are the VPP bridge domains the connection's interfaces were members of: sdk-vpp's
	// l2bridgedomain creates one per VLAN sub-interface and keeps it only in memory (see
	// NewBridgeDomainServer). Connections of one VLAN share it.
	BridgeDomains []uint32
}

// Interface is what the forwarder created for one side of a connection.
type Interface struct {
	// Outgoing is the side toward the next hop (sdk-vpp's client metadata); false is the client's side.
	Outgoing bool `json:"outgoing,omitempty"`
	// Tag is the tag sdk-vpp gave the VPP interface: the ID of that side's connection.
	Tag string `json:"tag"`
	// SwIfIndex is the VPP interface; 0 when the side has none.
	SwIfIndex uint32 `json:"swIfIndex,omitempty"`
	// Link is the kernel interface in the pod (a tap's host side or a veth's pod end).
	Link *Link `json:"link,omitempty"`
	// Peer is the forwarder's end of a veth pair, in the forwarder's own namespace.
	Peer *Link `json:"peer,omitempty"`
}

// Link is one kernel link as the kernel showed it when it was recorded.
type Link struct {
	// Netns is the inode URL of the link's namespace; empty for the forwarder's own.
	Netns string `json:"netns,omitempty"`
	Name  string `json:"name"`
	Index int    `json:"index"`
	MAC   string `json:"mac,omitempty"`
}

// Side returns the state's interface of one side, if it has one.
func (s *State) Side(outgoing bool) (Interface, bool) {
	for _, i := range s.GetInterfaces() {
		if i.Outgoing == outgoing {
			return i, true
		}
	}
	return Interface{}, false
}

// names is whether the state holds i, the same interface of the same side. Nil-safe.
func (s *State) names(i Interface) bool {
	for _, held := range s.GetInterfaces() {
		if held.Outgoing == i.Outgoing && held.Tag == i.Tag && held.SwIfIndex == i.SwIfIndex &&
			linkEqual(held.Link, i.Link) && linkEqual(held.Peer, i.Peer) {
			return true
		}
	}
	return false
}

// GetOutgoing is nil-safe.
func (s *State) GetOutgoing() *networkservice.Connection {
	if s == nil {
		return nil
	}
	return s.Outgoing
}

// GetInterfaces is nil-safe.
func (s *State) GetInterfaces() []Interface {
	if s == nil {
		return nil
	}
	return s.Interfaces
}

// InterfaceStates are States and then the superseded ones: every state whose interfaces and
// bridge domains may still exist.
func (r *Record) InterfaceStates() []*State {
	return append(r.States(), r.Superseded...)
}

// States are the record's versions that may have left something: the intent first, it is newer.
func (r *Record) States() []*State {
	var states []*State
	for _, s := range []*State{r.Intent, r.Committed} {
		if s != nil {
			states = append(states, s)
		}
	}
	return states
}

// IDs are every connection ID the record names, sorted: its own, both sides' of every state and
// their path segments'. They describe the record; they never identify it (see Hop): another hop
// of the same path names the same IDs.
func (r *Record) IDs() []string {
	seen := map[string]bool{r.ID: true}
	for _, s := range r.States() {
		for _, conn := range []*networkservice.Connection{s.Incoming, s.Outgoing} {
			if conn.GetId() != "" {
				seen[conn.GetId()] = true
			}
			for _, segment := range conn.GetPath().GetPathSegments() {
				if segment.GetId() != "" {
					seen[segment.GetId()] = true
				}
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Hop is where a forwarder's connection sits on its path: the position of the forwarder's own
// segment, that segment's name, and the ID of the segment before it (the peer that asked).
//
// Neither a path's segment IDs nor its client's ID tell apart the hops one forwarder carries of
// one path: in a local chain (nsc, nsmgr, forwarder, nsmgr, pass-through endpoint, nsmgr,
// forwarder, nsmgr, endpoint) the second hop's path holds every segment of the first. The
// forwarder's own segment ID does: sdk's updatepath takes it from the Request's segment at that
// position when the segment carries the forwarder's name. A forwarder that comes back under
// another name (its pod replaced) gets a new ID there instead, and only the rest of its segment
// stays: its position and the ID of the segment before it, which is the asking peer's own
// connection ID (updatepath refuses a Request whose current segment is not the connection's ID).
// Two hops of one path sit at different positions, and two paths never share the asking peer's
// connection, so that pair names one hop; it is taken as the same hop only when the name changed,
// which is the one case in which updatepath issues a new ID.
type Hop struct {
	Index    uint32
	Name     string
	Previous string
}

// HopOf is conn's hop, as sdk's updatepath left it for this forwarder; ok is false when the path
// does not say (no segment at the path's index, or none before it).
func HopOf(conn *networkservice.Connection) (hop Hop, ok bool) {
	segments := conn.GetPath().GetPathSegments()
	index := conn.GetPath().GetIndex()
	if index == 0 || int(index) >= len(segments) || segments[index-1].GetId() == "" {
		return Hop{}, false
	}
	return Hop{Index: index, Name: segments[index].GetName(), Previous: segments[index-1].GetId()}, true
}

// Hop is the record's hop, read from its newest state.
func (r *Record) Hop() (Hop, bool) {
	for _, s := range r.States() {
		if hop, ok := HopOf(s.Incoming); ok {
			return hop, true
		}
	}
	return Hop{}, false
}

// RenamedAs reports whether a Request at hop (with connection ID id) is this record's connection
// coming back through this forwarder under another name: the same position, the same asking
// peer's connection, another name and so another ID. See Hop.
func (r *Record) RenamedAs(id string, hop Hop) bool {
	recorded, ok := r.Hop()
	return ok && id != r.ID && recorded.Index == hop.Index && recorded.Previous == hop.Previous && recorded.Name != hop.Name
}

// SideIDs are the IDs sdk-vpp tags this connection's VPP interfaces with: each state's incoming and
// outgoing connection ID.
func (r *Record) SideIDs() map[string]bool {
	ids := map[string]bool{r.ID: true}
	for _, s := range r.States() {
		for _, conn := range []*networkservice.Connection{s.Incoming, s.Outgoing} {
			if conn.GetId() != "" {
				ids[conn.GetId()] = true
			}
		}
	}
	return ids
}

// FirstSegmentIDs are the IDs of the client's own path segment in every state: sdk-vpp's veth
// aliases name the connection by it.
func (r *Record) FirstSegmentIDs() map[string]bool {
	ids := map[string]bool{}
	for _, s := range r.States() {
		if segments := s.Incoming.GetPath().GetPathSegments(); len(segments) > 0 && segments[0].GetId() != "" {
			ids[segments[0].GetId()] = true
		}
	}
	return ids
}

// Clone is a deep copy.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	out := &Record{ID: r.ID, Committed: r.Committed.clone(), Intent: r.Intent.clone(), Namespaces: map[string]netnsid.Identity{}}
	for _, superseded := range r.Superseded {
		out.Superseded = append(out.Superseded, superseded.clone())
	}
	for k, v := range r.Namespaces {
		out.Namespaces[k] = v
	}
	return out
}

func (s *State) clone() *State {
	if s == nil {
		return nil
	}
	out := &State{Incoming: s.Incoming.Clone(), Outgoing: s.Outgoing.Clone(), BridgeDomains: slices.Clone(s.BridgeDomains)}
	for _, i := range s.Interfaces {
		out.Interfaces = append(out.Interfaces, i.clone())
	}
	return out
}

func (i Interface) clone() Interface {
	if i.Link != nil {
		link := *i.Link
		i.Link = &link
	}
	if i.Peer != nil {
		peer := *i.Peer
		i.Peer = &peer
	}
	return i
}

func (s *State) equal(o *State) bool {
	if s == nil || o == nil {
		return s == o
	}
	if !proto.Equal(s.Incoming, o.Incoming) || !proto.Equal(s.Outgoing, o.Outgoing) || len(s.Interfaces) != len(o.Interfaces) ||
		!slices.Equal(s.BridgeDomains, o.BridgeDomains) {
		return false
	}
	for n := range s.Interfaces {
		a, b := s.Interfaces[n], o.Interfaces[n]
		if a.Outgoing != b.Outgoing || a.Tag != b.Tag || a.SwIfIndex != b.SwIfIndex || !linkEqual(a.Link, b.Link) || !linkEqual(a.Peer, b.Peer) {
			return false
		}
	}
	return true
}

func linkEqual(a, b *Link) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// mechanismParameters are the parameters of each mechanism a cleanup or an adoption reads; the
// others (and every token) are never written to disk.
var mechanismParameters = map[string][]string{
	kernel.MECHANISM: {kernel.NetNSURL, kernel.InterfaceNameKey, kernel.VLAN},
	vxlan.MECHANISM:  {common.SrcIP, common.DstIP, vxlan.VNI, common.SrcPort, common.DstPort},
}

// strip returns what the journal keeps of conn: its ID, service and endpoint names (a restarted
// forwarder finds the next hop it abandons by the endpoint's), path segment IDs and names, its
// mechanism's kind and the parameters a cleanup reads, and its IP context. nil stays nil.
func strip(conn *networkservice.Connection) *networkservice.Connection {
	if conn == nil {
		return nil
	}
	stripped := &networkservice.Connection{Id: conn.GetId(), NetworkService: conn.GetNetworkService(),
		NetworkServiceEndpointName: conn.GetNetworkServiceEndpointName()}
	if mechanism := conn.GetMechanism(); mechanism != nil {
		parameters := map[string]string{}
		for _, key := range mechanismParameters[mechanism.GetType()] {
			if value, ok := mechanism.GetParameters()[key]; ok {
				parameters[key] = value
			}
		}
		stripped.Mechanism = &networkservice.Mechanism{Cls: mechanism.GetCls(), Type: mechanism.GetType(), Parameters: parameters}
	}
	if path := conn.GetPath(); path != nil {
		stripped.Path = &networkservice.Path{Index: path.GetIndex()}
		for _, segment := range path.GetPathSegments() {
			stripped.Path.PathSegments = append(stripped.Path.PathSegments, &networkservice.PathSegment{Id: segment.GetId(), Name: segment.GetName()})
		}
	}
	if ipContext := conn.GetContext().GetIpContext(); ipContext != nil {
		stripped.Context = &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: ipContext.GetSrcIpAddrs(),
			DstIpAddrs: ipContext.GetDstIpAddrs(),
			SrcRoutes:  ipContext.GetSrcRoutes(),
			DstRoutes:  ipContext.GetDstRoutes(),
			Policies:   ipContext.GetPolicies(),
		}}
	}
	return stripped.Clone()
}

// wireRecord is a record as it is written: JSON, the connections in protojson.
type wireRecord struct {
	Version    int                         `json:"version"`
	ID         string                      `json:"id"`
	Committed  *wireState                  `json:"committed,omitempty"`
	Intent     *wireState                  `json:"intent,omitempty"`
	Superseded []*wireState                `json:"superseded,omitempty"`
	Namespaces map[string]netnsid.Identity `json:"namespaces,omitempty"`
}

type wireState struct {
	Incoming      json.RawMessage `json:"incoming,omitempty"`
	Outgoing      json.RawMessage `json:"outgoing,omitempty"`
	Interfaces    []Interface     `json:"interfaces,omitempty"`
	BridgeDomains []uint32        `json:"bridgeDomains,omitempty"`
}

func encode(r *Record) ([]byte, error) {
	w := wireRecord{Version: formatVersion, ID: r.ID, Namespaces: r.Namespaces}
	var err error
	if w.Committed, err = encodeState(r.Committed); err != nil {
		return nil, err
	}
	if w.Intent, err = encodeState(r.Intent); err != nil {
		return nil, err
	}
	for _, superseded := range r.Superseded {
		state, err := encodeState(superseded)
		if err != nil {
			return nil, err
		}
		w.Superseded = append(w.Superseded, state)
	}
	return json.Marshal(w)
}

func encodeState(s *State) (*wireState, error) {
	if s == nil {
		return nil, nil
	}
	w := &wireState{Interfaces: s.Interfaces, BridgeDomains: s.BridgeDomains}
	for _, c := range []struct {
		conn *networkservice.Connection
		into *json.RawMessage
	}{{s.Incoming, &w.Incoming}, {s.Outgoing, &w.Outgoing}} {
		if c.conn == nil {
			continue
		}
		data, err := protojson.Marshal(c.conn)
		if err != nil {
			return nil, err
		}
		*c.into = data
	}
	return w, nil
}

// decode parses a record; anything it cannot fully understand is an error.
func decode(data []byte) (*Record, error) {
	var w wireRecord
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&w); err != nil {
		return nil, errors.Wrap(err, "not a journal record")
	}
	if w.Version != formatVersion {
		return nil, errors.Errorf("record format version %d, this forwarder reads %d", w.Version, formatVersion)
	}
	if w.ID == "" {
		return nil, errors.New("record without a connection ID")
	}
	r := &Record{ID: w.ID, Namespaces: w.Namespaces}
	if r.Namespaces == nil {
		r.Namespaces = map[string]netnsid.Identity{}
	}
	var err error
	if r.Committed, err = decodeState(w.Committed); err != nil {
		return nil, errors.Wrap(err, "committed state")
	}
	if r.Intent, err = decodeState(w.Intent); err != nil {
		return nil, errors.Wrap(err, "intent")
	}
	for _, w := range w.Superseded {
		state, err := decodeState(w)
		if err != nil || state == nil {
			return nil, errors.Wrap(err, "superseded state")
		}
		r.Superseded = append(r.Superseded, state)
	}
	if r.Committed == nil && r.Intent == nil {
		return nil, errors.New("record with neither a committed state nor an intent")
	}
	return r, nil
}

func decodeState(w *wireState) (*State, error) {
	if w == nil {
		return nil, nil
	}
	s := &State{Interfaces: w.Interfaces, BridgeDomains: w.BridgeDomains}
	for _, c := range []struct {
		data json.RawMessage
		into **networkservice.Connection
	}{{w.Incoming, &s.Incoming}, {w.Outgoing, &s.Outgoing}} {
		if len(c.data) == 0 {
			continue
		}
		conn := &networkservice.Connection{}
		if err := protojson.Unmarshal(c.data, conn); err != nil {
			return nil, err
		}
		*c.into = conn
	}
	if s.Incoming == nil {
		return nil, errors.New("state without its incoming connection")
	}
	return s, nil
}

// MarshalJSON is the record as the journal writes it.
func (r *Record) MarshalJSON() ([]byte, error) {
	return encode(r)
}
