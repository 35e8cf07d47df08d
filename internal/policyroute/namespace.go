package policyroute

import (
	"runtime"
	"sync"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/nshandle"
)

// namespace is one Request's view of a client network namespace: a netlink handle for route dumps, with strict
// checking so the kernel filters by table and link instead of sending everything, and an rtnetlink socket for
// rule dumps and batched writes.
type namespace struct {
	id     string
	handle *netlink.Handle
	rtnl   *rtnlConn
}

func openNamespace(netnsURL string) (*namespace, error) {
	target, err := nshandle.FromURL(netnsURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = target.Close() }()

	var handle *netlink.Handle
	var socket *nl.NetlinkSocket
	err = inNamespace(target, func() (err error) {
		if handle, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return err
		}
		socket, err = nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
		return err
	})
	if err == nil {
		// Best effort: before Linux 4.20 the kernel ignores dump filters and the netlink library applies the same
		// filters in user space, which is correct, only slower.
		_ = handle.SetStrictCheck(true)
	}
	if err != nil {
		if handle != nil {
			handle.Close()
		}
		if socket != nil {
			socket.Close()
		}
		return nil, errors.Wrapf(err, "failed to open netlink sockets in %s", netnsURL)
	}
	return &namespace{id: target.UniqueId(), handle: handle, rtnl: newRtnlConn(socket)}, nil
}

// inNamespace runs create on a thread moved into target, entering it once for all sockets rather than once
// per socket. If the thread cannot return to its namespace it stays locked, so the runtime retires it.
func inNamespace(target netns.NsHandle, create func() error) error {
	runtime.LockOSThread()
	origin, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = origin.Close() }()
	if err = netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	createErr := create()
	if err = netns.Set(origin); err != nil {
		return errors.Wrap(err, "failed to return to the forwarder's network namespace")
	}
	runtime.UnlockOSThread()
	return createErr
}

func (n *namespace) Close() {
	n.handle.Close()
	n.rtnl.Close()
}

// namespaceLocks serializes reconciliations per network namespace: each one reads the namespace, decides and
// writes, and two interleaved ones could both pick the same free table.
type namespaceLocks struct {
	mu    sync.Mutex
	locks map[string]*refLock
}

type refLock struct {
	sync.Mutex
	refs int
}

func (l *namespaceLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]*refLock)
	}
	entry, ok := l.locks[id]
	if !ok {
		entry = &refLock{}
		l.locks[id] = entry
	}
	entry.refs++
	l.mu.Unlock()

	entry.Lock()
	return func() {
		entry.Unlock()
		l.mu.Lock()
		entry.refs--
		if entry.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
