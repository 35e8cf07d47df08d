package policyroute

import (
	"sync"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/nshandle"
)

// namespace is one Request's view of a client network namespace: a netlink handle for route dumps (with strict
// checking, so the kernel filters by table and link instead of sending everything), one for rule dumps (the
// library's rule dump request does not pass strict checking) and a socket for batched writes.
type namespace struct {
	id         string
	handle     *netlink.Handle
	ruleHandle *netlink.Handle
	writer     *batchWriter
}

func openNamespace(netnsURL string) (*namespace, error) {
	nsHandle, err := nshandle.FromURL(netnsURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = nsHandle.Close() }()

	handle, err := netlink.NewHandleAt(nsHandle, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, errors.Wrapf(err, "failed to open a netlink handle in %s", netnsURL)
	}
	if err = handle.SetStrictCheck(true); err != nil {
		handle.Close()
		return nil, errors.Wrap(err, "failed to enable netlink strict checking")
	}
	ruleHandle, err := netlink.NewHandleAt(nsHandle, unix.NETLINK_ROUTE)
	if err != nil {
		handle.Close()
		return nil, errors.Wrapf(err, "failed to open a netlink handle in %s", netnsURL)
	}
	socket, err := nl.GetNetlinkSocketAt(nsHandle, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		handle.Close()
		ruleHandle.Close()
		return nil, errors.Wrapf(err, "failed to open a netlink socket in %s", netnsURL)
	}
	return &namespace{id: nsHandle.UniqueId(), handle: handle, ruleHandle: ruleHandle, writer: newBatchWriter(socket)}, nil
}

func (n *namespace) Close() {
	n.handle.Close()
	n.ruleHandle.Close()
	n.writer.Close()
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
