package state

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/networkservicemesh/govpp/binapi/acl_types"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
)

// LocalIfIndex is local0, the interface every VPP starts with.
const LocalIfIndex = 0

// State is the whole configuration of one simulated VPP.
type State struct {
	Interfaces    map[uint32]*Interface `json:"interfaces"`
	NextSwIfIndex uint32                `json:"next_sw_if_index"`
	// FreeSwIfIndexes are indexes of deleted interfaces. VPP allocates from a pool whose
	// free list is a stack, so the index freed last is handed out next.
	FreeSwIfIndexes []uint32 `json:"free_sw_if_indexes,omitempty"`
	// Tables, Routes and Neighbors are keyed by Key* so that dumps and JSON are stable.
	Tables         map[string]*Table         `json:"tables"`
	Routes         map[string]*Route         `json:"routes"`
	Neighbors      map[string]*Neighbor      `json:"neighbors"`
	ACLs           map[uint32]*ACL           `json:"acls"`
	BridgeDomains  map[uint32]*BridgeDomain  `json:"bridge_domains"`
	MemifSockets   map[uint32]string         `json:"memif_sockets"`
	WireguardPeers map[uint32]*WireguardPeer `json:"wireguard_peers"`
	// Records keeps objects the simulator only remembers (ikev2 profiles, cnat
	// translations, ...), by kind and key, as the request that created them.
	Records map[string]map[string]json.RawMessage `json:"records"`
}

// Table is a FIB table.
type Table struct {
	ID    uint32 `json:"id"`
	IsIP6 bool   `json:"is_ip6"`
	Name  string `json:"name"`
}

// Route is one prefix in one table with its paths.
type Route struct {
	TableID uint32              `json:"table_id"`
	Prefix  string              `json:"prefix"`
	Paths   []fib_types.FibPath `json:"paths"`
}

// Neighbor is a static IP neighbour.
type Neighbor struct {
	SwIfIndex uint32 `json:"sw_if_index"`
	IP        string `json:"ip"`
	MAC       string `json:"mac"`
	Flags     uint8  `json:"flags"`
}

// ACL is an access list with its rules.
type ACL struct {
	Index uint32              `json:"index"`
	Tag   string              `json:"tag"`
	Rules []acl_types.ACLRule `json:"rules"`
}

// BridgeDomain is an L2 bridge domain's settings.
type BridgeDomain struct {
	ID      uint32 `json:"id"`
	Flood   bool   `json:"flood"`
	UuFlood bool   `json:"uu_flood"`
	Forward bool   `json:"forward"`
	Learn   bool   `json:"learn"`
	ArpTerm bool   `json:"arp_term"`
	MacAge  uint8  `json:"mac_age"`
	Tag     string `json:"tag"`
}

// WireguardPeer is a wireguard peer (recorded only).
type WireguardPeer struct {
	Index     uint32   `json:"index"`
	SwIfIndex uint32   `json:"sw_if_index"`
	PublicKey []byte   `json:"public_key"`
	Endpoint  string   `json:"endpoint"`
	Port      uint16   `json:"port"`
	Keepalive uint16   `json:"persistent_keepalive"`
	Allowed   []string `json:"allowed_ips"`
	Flags     uint8    `json:"flags"`
}

// New returns the state of a freshly started VPP: only local0, only the default tables.
func New() *State {
	s := &State{
		Interfaces:     make(map[uint32]*Interface),
		NextSwIfIndex:  LocalIfIndex + 1,
		Tables:         make(map[string]*Table),
		Routes:         make(map[string]*Route),
		Neighbors:      make(map[string]*Neighbor),
		ACLs:           make(map[uint32]*ACL),
		BridgeDomains:  make(map[uint32]*BridgeDomain),
		MemifSockets:   map[uint32]string{0: "/run/vpp/memif.sock"},
		WireguardPeers: make(map[uint32]*WireguardPeer),
		Records:        make(map[string]map[string]json.RawMessage),
	}
	s.Interfaces[LocalIfIndex] = &Interface{SwIfIndex: LocalIfIndex, Name: "local0", Kind: KindLocal, DevType: "local"}
	for _, ip6 := range []bool{false, true} {
		t := &Table{ID: 0, IsIP6: ip6, Name: "default"}
		s.Tables[TableKey(0, ip6)] = t
	}
	return s
}

// PeekSwIfIndex is the index the next interface will get.
func (s *State) PeekSwIfIndex() uint32 {
	if n := len(s.FreeSwIfIndexes); n > 0 {
		return s.FreeSwIfIndexes[n-1]
	}
	return s.NextSwIfIndex
}

// AllocateSwIfIndex hands out PeekSwIfIndex.
func (s *State) AllocateSwIfIndex() uint32 {
	if n := len(s.FreeSwIfIndexes); n > 0 {
		idx := s.FreeSwIfIndexes[n-1]
		s.FreeSwIfIndexes = s.FreeSwIfIndexes[:n-1]
		return idx
	}
	s.NextSwIfIndex++
	return s.NextSwIfIndex - 1
}

// FreeSwIfIndex returns a deleted interface's index to the pool.
func (s *State) FreeSwIfIndex(idx uint32) {
	s.FreeSwIfIndexes = append(s.FreeSwIfIndexes, idx)
}

// Clone returns a deep copy, for readers that must not race with the simulator.
func (s *State) Clone() *State {
	data, err := json.Marshal(s)
	if err != nil {
		panic(err) // every field is plain data; failing here is a programming error
	}
	out := &State{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

// SortedInterfaces returns the interfaces ordered by sw_if_index.
func (s *State) SortedInterfaces() []*Interface {
	out := make([]*Interface, 0, len(s.Interfaces))
	for _, i := range s.Interfaces {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].SwIfIndex < out[b].SwIfIndex })
	return out
}

// InterfaceByName finds an interface by its VPP name.
func (s *State) InterfaceByName(name string) (*Interface, bool) {
	for _, i := range s.Interfaces {
		if i.Name == name {
			return i, true
		}
	}
	return nil, false
}

// TableKey names a FIB table in State.Tables.
func TableKey(id uint32, ip6 bool) string {
	if ip6 {
		return "ip6/" + strconv.FormatUint(uint64(id), 10)
	}
	return "ip4/" + strconv.FormatUint(uint64(id), 10)
}

// RouteKey names a route in State.Routes.
func RouteKey(tableID uint32, ip6 bool, prefix string) string {
	return TableKey(tableID, ip6) + "/" + prefix
}

// NeighborKey names a neighbour in State.Neighbors.
func NeighborKey(swIfIndex uint32, ip string) string {
	return strconv.FormatUint(uint64(swIfIndex), 10) + "/" + ip
}

// SortedKeys returns a map's keys in order, for stable dumps.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SortedIndexes returns a map's uint32 keys in order, for stable dumps.
func SortedIndexes[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	return keys
}
