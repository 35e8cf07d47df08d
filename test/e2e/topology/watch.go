package topology

import (
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// LinkEvent is a link appearing or disappearing in a namespace.
type LinkEvent struct {
	Name    string
	Index   int
	Deleted bool
}

func (e LinkEvent) String() string {
	verb := "added"
	if e.Deleted {
		verb = "deleted"
	}
	return fmt.Sprintf("%s (ifindex %d) %s", e.Name, e.Index, verb)
}

// LinkWatch records the links added to and deleted from a namespace, from
// the kernel's own notifications: a link deleted and recreated between two
// inspections shows up here.
type LinkWatch struct {
	done     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	// known are the indexes of links that exist or existed: RTM_NEWLINK
	// also reports changes to them.
	known  map[int]bool
	events []LinkEvent
	err    error
}

// WatchLinks starts recording link events in the named namespace.
func WatchLinks(netnsName string) (*LinkWatch, error) {
	ns, err := netns.GetFromName(netnsName)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", netnsName, err)
	}
	defer func() { _ = ns.Close() }()
	w := &LinkWatch{done: make(chan struct{}), stopped: make(chan struct{}), known: map[int]bool{}}
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", netnsName, err)
	}
	defer handle.Close()
	updates := make(chan netlink.LinkUpdate, 64)
	if err = netlink.LinkSubscribeWithOptions(updates, w.done, netlink.LinkSubscribeOptions{
		Namespace:     &ns,
		ErrorCallback: w.fail,
	}); err != nil {
		return nil, fmt.Errorf("watch links in %s: %w", netnsName, err)
	}
	// Listed after subscribing, so that no link slips between the two.
	existing, err := handle.LinkList()
	if err != nil {
		close(w.done)
		return nil, err
	}
	for _, l := range existing {
		w.known[l.Attrs().Index] = true
	}
	go func() {
		defer close(w.stopped)
		for update := range updates {
			w.record(LinkEvent{Name: update.Attrs().Name, Index: update.Attrs().Index, Deleted: update.Header.Type == unix.RTM_DELLINK})
		}
	}()
	return w, nil
}

func (w *LinkWatch) fail(err error) {
	select {
	case <-w.done:
		// Stop closes the subscription's socket; its receive error is ours.
		return
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *LinkWatch) record(e LinkEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !e.Deleted {
		if w.known[e.Index] {
			return
		}
		w.known[e.Index] = true
	}
	w.events = append(w.events, e)
}

// Stop ends the watch and returns what it saw, in order, and the first error
// the subscription reported (events may be missing then). It may be called
// again.
func (w *LinkWatch) Stop() ([]LinkEvent, error) {
	w.stopOnce.Do(func() { close(w.done) })
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, w.err
}

// Snapshot returns what the watch saw so far.
func (w *LinkWatch) Snapshot() ([]LinkEvent, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]LinkEvent(nil), w.events...), w.err
}
