package inspect

import (
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
)

// Report is everything inspect found.
type Report struct {
	Journal     JournalReport `json:"journal"`
	VPP         VPPReport     `json:"vpp"`
	Connections []*Connection `json:"connections"`
	// Orphans carry the forwarder's mark (the rtnetlink protocol) but no connection accounts for them.
	Orphans []Finding `json:"orphans"`
	// Foreign is state in the forwarder's table range, or tagged VPP interfaces, that is not provably its own.
	Foreign []Finding `json:"foreign"`
}

// JournalReport says where the journal is and whether a forwarder holds it.
type JournalReport struct {
	Dir string `json:"dir"`
	// ForwarderRunning is true while a forwarder holds the journal's lock; false after a crash, when
	// its connections are leftovers the next run adopts or releases.
	ForwarderRunning bool   `json:"forwarderRunning"`
	Error            string `json:"error,omitempty"`
	// Unwritable says why the journal's directory takes no writes; a running forwarder then holds
	// its records in memory only and restart recovery is off until it does. Empty when writable.
	Unwritable string `json:"unwritable,omitempty"`
}

// VPPReport says which VPP was read.
type VPPReport struct {
	Socket     string `json:"socket"`
	Interfaces int    `json:"interfaces"`
	Error      string `json:"error,omitempty"`
}

// Connection is one journal record and what VPP and the kernel hold for it now.
type Connection struct {
	ID string `json:"id"`
	// Problems are the differences between the record and what is there; none for a healthy connection.
	Problems []string        `json:"problems"`
	Sides    []*Side         `json:"sides"`
	Record   *journal.Record `json:"record"`
}

// Side is the client's side or the next hop's side of a connection.
type Side struct {
	Side      string         `json:"side"`
	Mechanism string         `json:"mechanism"`
	VPP       []VPPInterface `json:"vpp"`
	Kernel    *Kernel        `json:"kernel,omitempty"`
	// ForwarderVeth is the forwarder's end of a veth pair, in the forwarder's namespace.
	ForwarderVeth *journal.Link `json:"forwarderVeth,omitempty"`
}

// VPPInterface is a VPP interface of a connection and its cross-connects.
type VPPInterface struct {
	restore.VPPInterface
	XConnects []string `json:"xconnects,omitempty"`
}

// Kernel is a side's kernel interface in its pod's namespace and the marked state through it.
type Kernel struct {
	Netns string `json:"netns"`
	// Namespace is "present", "gone", or why it cannot be told apart from another one.
	Namespace string   `json:"namespace"`
	Interface string   `json:"interface"`
	Index     int      `json:"index,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	Up        bool     `json:"up,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	// Routes are the forwarder's marked routes through the interface outside its policy tables (the
	// main table's, from linkroutes).
	Routes   []string      `json:"routes,omitempty"`
	Policies []PolicyTable `json:"policies,omitempty"`
}

// PolicyTable is a table the forwarder's marked routes through the interface are in, and the rules
// that look it up.
type PolicyTable struct {
	Table  uint32   `json:"table"`
	Rules  []string `json:"rules"`
	Routes []string `json:"routes"`
}

// Finding is one object outside every connection.
type Finding struct {
	Where string `json:"where"`
	What  string `json:"what"`
}
