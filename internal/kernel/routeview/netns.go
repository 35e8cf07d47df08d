package routeview

import (
	"runtime"

	"github.com/pkg/errors"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// monitorGroups are the notifications a view follows: rules and routes themselves, and the link,
// address and nexthop events after which the kernel drops routes without telling.
var monitorGroups = []int{
	unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE,
	unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR, unix.RTNLGRP_NEXTHOP,
}

const (
	// requestBuffer holds the replies of a write batch and the largest dump datagram the kernel sends.
	requestBuffer = 1 << 20
	// monitorBuffer holds the notifications of at least one write batch and of whatever else happens in
	// the namespace between two reconciliations; beyond that the view rebuilds itself from dumps.
	monitorBuffer = 8 << 20
)

// openSockets creates, inside target, the request socket for dumps and writes and the subscribed
// monitor socket. Both keep the namespace alive until closed.
func openSockets(target netns.NsHandle) (request, monitor int, err error) {
	request, monitor = -1, -1
	err = inNamespace(target, func() error {
		if request, err = netlinkSocket(requestBuffer); err != nil {
			return err
		}
		// The kernel then filters dumps by link, and acknowledgements do not echo the request.
		if err = unix.SetsockoptInt(request, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1); err != nil {
			return errors.Wrap(err, "strict checking (Linux 4.20+)")
		}
		_ = unix.SetsockoptInt(request, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
		if monitor, err = netlinkSocket(monitorBuffer); err != nil {
			return err
		}
		for _, group := range monitorGroups {
			if err = unix.SetsockoptInt(monitor, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, group); err != nil {
				return errors.Wrapf(err, "subscribing to rtnetlink group %d", group)
			}
		}
		return nil
	})
	if err != nil {
		closeFd(request)
		closeFd(monitor)
		return -1, -1, err
	}
	return request, monitor, nil
}

func netlinkSocket(buffer int) (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return -1, errors.Wrap(err, "netlink socket")
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		closeFd(fd)
		return -1, errors.Wrap(err, "binding a netlink socket")
	}
	// Forcing the size needs CAP_NET_ADMIN, which the forwarder has; without it the default is used.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, buffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, buffer)
	}
	return fd, nil
}

func closeFd(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

// inNamespace runs create on a thread moved into target, entering it once for all sockets rather than
// once per socket. If the thread cannot return to its namespace it stays locked, so the runtime retires it.
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
