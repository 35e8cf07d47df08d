package routeview

import (
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/nshandle"
)

// defaultLinger is how long a view nobody holds stays open: a forwarder that closes many connections
// of one namespace in a row, or cleans up after a restart, reads the namespace once, not per Close.
const defaultLinger = 30 * time.Second

// Registry hands out one view per network namespace. Elements that share a registry share the views,
// and so the dumps, the subscription and the namespace lock.
type Registry struct {
	mark   uint8
	linger time.Duration

	mu      sync.Mutex
	entries map[string]*registryEntry
	holders map[string]*registryEntry
}

type registryEntry struct {
	id string
	// lock is the namespace lock: one reconciliation reads, decides and writes at a time, so two of them
	// never both pick the same free table.
	lock sync.Mutex
	view *View

	// users, holders and closeGen are guarded by the registry's mutex.
	users    int
	holders  int
	closeGen int
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithLinger sets how long a view nobody holds stays open after its last use.
func WithLinger(d time.Duration) RegistryOption {
	return func(r *Registry) { r.linger = d }
}

// NewRegistry returns a registry whose views know rules and routes carrying mark as the forwarder's.
func NewRegistry(mark uint8, opts ...RegistryOption) *Registry {
	r := &Registry{mark: mark, linger: defaultLinger, entries: make(map[string]*registryEntry), holders: make(map[string]*registryEntry)}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// Mark is the rtnetlink protocol value its views know as the forwarder's.
func (r *Registry) Mark() uint8 { return r.mark }

// Open returns the view of the namespace netnsURL names, locked for the caller and in step with the
// kernel. The caller must call done when it has finished reading and writing.
func (r *Registry) Open(netnsURL string) (v *View, done func(), err error) {
	id, err := namespaceID(netnsURL)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "opening network namespace %s", netnsURL)
	}

	r.mu.Lock()
	e := r.entries[id]
	if e == nil {
		e = &registryEntry{id: id}
		r.entries[id] = e
	}
	e.users++
	e.closeGen++
	r.mu.Unlock()

	e.lock.Lock()
	release := func() {
		e.lock.Unlock()
		r.mu.Lock()
		e.users--
		r.scheduleClose(e)
		r.mu.Unlock()
	}
	if e.view == nil {
		if e.view, err = openView(netnsURL, id, r.mark); err != nil {
			release()
			return nil, nil, err
		}
		e.view.registry = e
	}
	if err := e.view.sync(); err != nil {
		release()
		return nil, nil, errors.Wrapf(err, "reading the rules and routes of %s", netnsURL)
	}
	return e.view, release, nil
}

// namespaceID names the namespace a file:// URL points at by its device and inode, as netns.NsHandle's
// UniqueId does, without opening it: a view, once open, keeps its namespace alive, so the pair cannot name
// another namespace while the view exists.
func namespaceID(netnsURL string) (string, error) {
	u, err := url.Parse(netnsURL)
	if err != nil || u.Scheme != "file" {
		return "", errors.Errorf("not a file:// URL: %q", netnsURL)
	}
	var st unix.Stat_t
	if err := unix.Stat(u.Path, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("NS(%d:%d)", st.Dev, st.Ino), nil
}

// openView opens the sockets of a new view inside the namespace, which must still be the one named id.
func openView(netnsURL, id string, mark uint8) (*View, error) {
	target, err := nshandle.FromURL(netnsURL)
	if err != nil {
		return nil, errors.Wrapf(err, "opening network namespace %s", netnsURL)
	}
	defer func() { _ = target.Close() }()
	if target.UniqueId() != id {
		return nil, errors.Errorf("network namespace %s changed while being opened", netnsURL)
	}
	request, monitor, err := openSockets(target)
	if err != nil {
		return nil, errors.Wrapf(err, "opening netlink sockets in %s", netnsURL)
	}
	return newView(id, request, monitor, mark), nil
}

// Hold keeps v open on behalf of holder until Release(holder), or until holder holds another view.
func (r *Registry) Hold(holder string, v *View) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := v.registry
	old := r.holders[holder]
	if old == e {
		return
	}
	if old != nil {
		old.holders--
		r.scheduleClose(old)
	}
	r.holders[holder] = e
	e.holders++
}

// Release lets go of what holder held; it needs no namespace, which may be gone by now.
func (r *Registry) Release(holder string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.holders[holder]; e != nil {
		delete(r.holders, holder)
		e.holders--
		r.scheduleClose(e)
	}
}

// scheduleClose closes e's view after the linger time if by then nobody uses or holds it. The caller
// holds r.mu.
func (r *Registry) scheduleClose(e *registryEntry) {
	if e.users > 0 || e.holders > 0 {
		return
	}
	e.closeGen++
	gen := e.closeGen
	time.AfterFunc(r.linger, func() {
		r.mu.Lock()
		if e.closeGen != gen || e.users > 0 || e.holders > 0 {
			r.mu.Unlock()
			return
		}
		if r.entries[e.id] == e {
			delete(r.entries, e.id)
		}
		r.mu.Unlock()
		e.lock.Lock()
		defer e.lock.Unlock()
		if e.view != nil {
			e.view.close()
			e.view = nil
		}
	})
}

// Close closes every view at once, held or not; the registry stays usable and opens views anew.
func (r *Registry) Close() {
	r.mu.Lock()
	entries := r.entries
	r.entries = make(map[string]*registryEntry)
	r.holders = make(map[string]*registryEntry)
	r.mu.Unlock()
	for _, e := range entries {
		e.lock.Lock()
		if e.view != nil {
			e.view.close()
			e.view = nil
		}
		e.lock.Unlock()
	}
}

// Views is how many views are open, for tests.
func (r *Registry) Views() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}
