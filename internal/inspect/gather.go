package inspect

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
)

// vppDialTimeout bounds the wait for a VPP whose socket exists but that does not answer.
const vppDialTimeout = 5 * time.Second

// Sources are where inspect reads: the forwarder's own configuration.
type Sources struct {
	JournalDir string
	// VPPSocket is NSM_VPP_API_SOCKET: an external VPP's socket when it exists.
	VPPSocket string
	// OwnVPPSocket is where the VPP the forwarder starts listens, read when VPPSocket does not
	// exist, as the forwarder then starts its own.
	OwnVPPSocket string
}

// vppSocket is the socket of the VPP the forwarder uses, or an error naming both it tried.
func (src Sources) vppSocket() (string, error) {
	if _, err := os.Stat(src.VPPSocket); err == nil || src.OwnVPPSocket == "" {
		return src.VPPSocket, nil
	}
	if _, err := os.Stat(src.OwnVPPSocket); err != nil {
		return src.VPPSocket, fmt.Errorf("no VPP API socket at %s (NSM_VPP_API_SOCKET, an external VPP) "+
			"nor at %s (the VPP the forwarder starts)", src.VPPSocket, src.OwnVPPSocket)
	}
	return src.OwnVPPSocket, nil
}

// Gather reads everything and matches it up; what cannot be read is said in the report, and the
// rest is still read.
func Gather(ctx context.Context, src Sources) *Report {
	r := &Report{Journal: JournalReport{Dir: src.JournalDir}, VPP: VPPReport{Socket: src.VPPSocket}, Connections: []*Connection{}, Orphans: []Finding{}, Foreign: []Finding{}}
	records, err := journal.Read(src.JournalDir)
	if err != nil {
		r.Journal.Error = err.Error()
	}
	if r.Journal.ForwarderRunning, err = journal.Locked(src.JournalDir); err != nil && r.Journal.Error == "" {
		r.Journal.Error = err.Error()
	}
	r.Journal.Unwritable = journal.Unwritable(src.JournalDir)
	var vpp *vppState
	if r.VPP.Socket, err = src.vppSocket(); err != nil {
		r.VPP.Error = err.Error()
	} else {
		vpp = readVPP(ctx, &r.VPP)
	}
	first, count := tableRange()
	spaces := newNamespaces(routeview.ForwarderProtocol)
	defer spaces.close()
	sideIDs, peers := map[string]bool{}, map[journal.Link]bool{}
	for _, rec := range records {
		r.Connections = append(r.Connections, connection(rec, vpp, spaces, first, count))
		for id := range rec.SideIDs() {
			sideIDs[id] = true
		}
		for _, state := range rec.InterfaceStates() {
			for _, i := range state.Interfaces {
				if i.Peer != nil {
					peers[*i.Peer] = true
				}
			}
		}
	}
	for _, ns := range spaces.byURL {
		orphans, foreign := ns.leftOver(first, count)
		r.Orphans, r.Foreign = append(r.Orphans, orphans...), append(r.Foreign, foreign...)
	}
	if vpp != nil {
		for _, i := range vpp.interfaces {
			if i.Tag != "" && !sideIDs[i.Tag] {
				r.Foreign = append(r.Foreign, Finding{Where: "vpp", What: fmt.Sprintf("%s %s (sw_if_index %d) tagged %q: not in the journal", i.Kind, i.Name, i.SwIfIndex, i.Tag)})
			}
		}
	}
	r.Foreign = append(r.Foreign, unrecordedVeths(peers)...)
	sortFindings(r.Orphans)
	sortFindings(r.Foreign)
	return r
}

func readVPP(ctx context.Context, report *VPPReport) *vppState {
	conn, err := vppconn.ConnectExisting(ctx, report.Socket, vppDialTimeout)
	if err != nil {
		report.Error = err.Error()
		return nil
	}
	defer conn.Close()
	state, err := readVPPState(ctx, conn)
	if err != nil {
		report.Error = err.Error()
		return nil
	}
	report.Interfaces = len(state.interfaces)
	return state
}

// connection matches one record with VPP and the kernel: the committed state, or the intent of a
// Request that never completed.
func connection(rec *journal.Record, vpp *vppState, spaces *namespaces, first, count uint32) *Connection {
	c := &Connection{ID: rec.ID, Problems: []string{}, Record: rec}
	state := rec.Committed
	if state == nil {
		state = rec.Intent
		c.Problems = append(c.Problems, "never completed: the journal holds only an intent")
	}
	for _, outgoing := range []bool{false, true} {
		conn := state.Incoming
		name := "client"
		if outgoing {
			conn, name = state.Outgoing, "next hop"
		}
		if conn == nil {
			continue
		}
		side := &Side{Side: name, Mechanism: conn.GetMechanism().GetType()}
		recorded, hasRecorded := state.Side(outgoing)
		if vpp != nil {
			// Both sides may carry the same tag (a next hop that adds no path segment): the other
			// side's recorded interface is not this side's, as restore tells them apart.
			other, _ := state.Side(!outgoing)
			side.VPP = vpp.tagged(conn.GetId(), other.SwIfIndex)
			if hasRecorded && recorded.SwIfIndex != 0 && !holds(side.VPP, recorded.SwIfIndex) {
				c.Problems = append(c.Problems, fmt.Sprintf("%s side: VPP no longer holds the recorded interface %d", name, recorded.SwIfIndex))
			}
		}
		if hasRecorded && recorded.Peer != nil {
			side.ForwarderVeth = recorded.Peer
			if l, err := netlink.LinkByIndex(recorded.Peer.Index); err != nil || l.Attrs().Name != recorded.Peer.Name {
				c.Problems = append(c.Problems, fmt.Sprintf("%s side: the forwarder's veth end %s is gone", name, recorded.Peer.Name))
			}
		}
		side.Kernel, c.Problems = kernelSide(rec, conn, recorded.Link, spaces, first, count, name, c.Problems)
		c.Sides = append(c.Sides, side)
	}
	return c
}

func kernelSide(rec *journal.Record, conn *networkservice.Connection, recorded *journal.Link, spaces *namespaces, first, count uint32, name string, problems []string) (*Kernel, []string) {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil {
		return nil, problems
	}
	k := &Kernel{Netns: mechanism.GetNetNSURL(), Interface: mechanism.GetInterfaceName()}
	identity, ok := rec.Namespaces[k.Netns]
	var ns *namespace
	ns, k.Namespace = spaces.open(k.Netns, identity, ok)
	if ns == nil {
		return k, append(problems, fmt.Sprintf("%s side: namespace %s %s", name, k.Netns, k.Namespace))
	}
	for _, p := range ns.readSide(k, first, count) {
		problems = append(problems, name+" side: "+p)
	}
	if recorded != nil && k.Index != 0 && (recorded.Index != k.Index || recorded.MAC != k.MAC) {
		problems = append(problems, fmt.Sprintf("%s side: %s is not the recorded interface (index %d, MAC %s)", name, k.Interface, recorded.Index, recorded.MAC))
	}
	return k, problems
}

func holds(interfaces []VPPInterface, index uint32) bool {
	for _, i := range interfaces {
		if i.SwIfIndex == index {
			return true
		}
	}
	return false
}

// unrecordedVeths are the veth ends in the forwarder's namespace whose alias looks like one
// sdk-vpp gives, but that no record names by name, index and MAC: an alias proves nothing (any
// agent can set one, and the hops of a local chain share theirs), so restore leaves them alone
// and they are reported as foreign.
func unrecordedVeths(recorded map[journal.Link]bool) []Finding {
	links, err := netlink.LinkList()
	if err != nil {
		return []Finding{{Where: "forwarder namespace", What: "links unreadable: " + err.Error()}}
	}
	var out []Finding
	for _, l := range links {
		if _, ok := restore.VethConnectionID(l); !ok {
			continue
		}
		if recorded[journal.Link{Name: l.Attrs().Name, Index: l.Attrs().Index, MAC: l.Attrs().HardwareAddr.String()}] {
			continue
		}
		out = append(out, Finding{Where: "forwarder namespace", What: fmt.Sprintf("veth %s (alias %s): not recorded by the journal", l.Attrs().Name, l.Attrs().Alias)})
	}
	return out
}

func sortFindings(f []Finding) {
	sort.Slice(f, func(a, b int) bool { return f[a].Where+f[a].What < f[b].Where+f[b].What })
}
