package netwatch

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// sentinelTable receives a blackhole route when a watch settles: once the watch sees it, it has
// read every notification sent before it. Its notifications are never reported.
const sentinelTable = 77

// Event is one change the kernel reported.
type Event struct {
	// What is "link", "address", "route" or "rule"; Deleted tells removal from addition or change.
	What    string
	Deleted bool
	// Index is the link of a link or address event; Name the link's name when the kernel gave it.
	Index int
	Name  string
	// Table is the routing table of a route or rule event.
	Table int
	// Prefix is the address of an address event, the destination of a route event.
	Prefix string
}

func (e Event) String() string {
	verb := "written"
	if e.Deleted {
		verb = "deleted"
	}
	switch e.What {
	case "link":
		if !e.Deleted {
			verb = "added"
		}
		return fmt.Sprintf("link %s (ifindex %d) %s", e.Name, e.Index, verb)
	case "address":
		return fmt.Sprintf("address %s on ifindex %d %s", e.Prefix, e.Index, verb)
	case "route":
		return fmt.Sprintf("route %s in table %d %s", e.Prefix, e.Table, verb)
	default:
		return fmt.Sprintf("rule in table %d %s", e.Table, verb)
	}
}

// IsWrite is true for an address, route or rule added, replaced or deleted.
func (e Event) IsWrite() bool { return e.What != "link" }

// Watch records the changes in one namespace.
type Watch struct {
	socket  *nl.NetlinkSocket
	handle  *netlink.Handle
	stopped chan struct{}

	mu       sync.Mutex
	known    map[int]bool // links that exist or existed: RTM_NEWLINK also reports changes
	events   []Event
	err      error
	closed   bool
	sentinel chan struct{}

	stopOnce   sync.Once
	stopEvents []Event
	stopErr    error
}

// Start watches the namespace at path (a /var/run/netns file or any namespace file).
func Start(path string) (*Watch, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("netwatch: open %s: %w", path, err)
	}
	defer func() { _ = ns.Close() }()
	socket, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_ROUTE,
		unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR,
		unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE, unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE)
	if err != nil {
		return nil, fmt.Errorf("netwatch: subscribe in %s: %w", path, err)
	}
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		socket.Close()
		return nil, fmt.Errorf("netwatch: netlink in %s: %w", path, err)
	}
	w := &Watch{socket: socket, handle: handle, stopped: make(chan struct{}), known: map[int]bool{}}
	// Listed after subscribing, so that no link slips between the two.
	links, err := handle.LinkList()
	if err != nil {
		w.close()
		return nil, err
	}
	for _, l := range links {
		w.known[l.Attrs().Index] = true
	}
	go w.run()
	return w, nil
}

func (w *Watch) run() {
	defer close(w.stopped)
	for {
		msgs, _, err := w.socket.Receive()
		if err != nil {
			w.mu.Lock()
			if !w.closed {
				// After Stop closed the socket, a receive error is the end, not a failure.
				w.err = fmt.Errorf("netwatch: %w", err)
			}
			w.mu.Unlock()
			return
		}
		for _, msg := range msgs {
			w.record(msg)
		}
	}
}

func (w *Watch) record(msg syscall.NetlinkMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch msg.Header.Type {
	case unix.RTM_NEWLINK, unix.RTM_DELLINK:
		info := nl.DeserializeIfInfomsg(msg.Data)
		index := int(info.Index)
		deleted := msg.Header.Type == unix.RTM_DELLINK
		if !deleted {
			if w.known[index] {
				return
			}
			w.known[index] = true
		}
		w.events = append(w.events, Event{What: "link", Deleted: deleted, Index: index, Name: linkName(msg.Data)})
	case unix.RTM_NEWADDR, unix.RTM_DELADDR:
		info := nl.DeserializeIfAddrmsg(msg.Data)
		w.events = append(w.events, Event{What: "address", Deleted: msg.Header.Type == unix.RTM_DELADDR, Index: int(info.Index),
			Prefix: prefix(msg.Data[unix.SizeofIfAddrmsg:], unix.IFA_ADDRESS, info.Prefixlen)})
	case unix.RTM_NEWROUTE, unix.RTM_DELROUTE, unix.RTM_NEWRULE, unix.RTM_DELRULE:
		table := routeTable(msg.Data)
		if table == sentinelTable {
			if msg.Header.Type == unix.RTM_NEWROUTE && w.sentinel != nil {
				close(w.sentinel)
				w.sentinel = nil
			}
			return
		}
		what := "route"
		if msg.Header.Type == unix.RTM_NEWRULE || msg.Header.Type == unix.RTM_DELRULE {
			what = "rule"
		}
		deleted := msg.Header.Type == unix.RTM_DELROUTE || msg.Header.Type == unix.RTM_DELRULE
		e := Event{What: what, Deleted: deleted, Table: table}
		if what == "route" {
			e.Prefix = prefix(msg.Data[unix.SizeofRtMsg:], unix.RTA_DST, nl.DeserializeRtMsg(msg.Data).Dst_len)
		}
		w.events = append(w.events, e)
	}
}

// Settle returns every change the kernel reported up to now.
func (w *Watch) Settle() ([]Event, error) {
	seen := make(chan struct{})
	w.mu.Lock()
	w.sentinel = seen
	w.mu.Unlock()
	_, dst, _ := net.ParseCIDR("203.0.113.77/32")
	sentinel := &netlink.Route{Dst: dst, Table: sentinelTable, Type: unix.RTN_BLACKHOLE}
	if err := w.handle.RouteAdd(sentinel); err != nil {
		return nil, fmt.Errorf("netwatch: sentinel route: %w", err)
	}
	defer func() { _ = w.handle.RouteDel(sentinel) }()
	select {
	case <-seen:
	case <-w.stopped:
		return nil, fmt.Errorf("netwatch: the watch ended before the sentinel")
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("netwatch: the sentinel route was never reported")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Event(nil), w.events...), w.err
}

// Stop settles, ends the watch and returns what it saw. Later calls return the same.
func (w *Watch) Stop() ([]Event, error) {
	w.stopOnce.Do(func() {
		w.stopEvents, w.stopErr = w.Settle()
		w.close()
	})
	return w.stopEvents, w.stopErr
}

func (w *Watch) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.socket.Close()
	w.handle.Close()
}

// Writes are the address, route and rule events among events.
func Writes(events []Event) []Event {
	var writes []Event
	for _, e := range events {
		if e.IsWrite() {
			writes = append(writes, e)
		}
	}
	return writes
}

// LinkChanges are the links added or deleted among events, of the named link only when name is set.
func LinkChanges(events []Event, name string) []Event {
	var changes []Event
	for _, e := range events {
		if e.What == "link" && (name == "" || e.Name == name) {
			changes = append(changes, e)
		}
	}
	return changes
}
