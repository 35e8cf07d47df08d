package routeview

import (
	"github.com/mdlayher/netlink"
	"github.com/pkg/errors"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// monitorGroups are the notifications a view follows: rules and routes themselves, and the link,
// address and nexthop events after which the kernel drops routes without telling.
var monitorGroups = []uint32{
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
func openSockets(target netns.NsHandle) (request, monitor *netlink.Conn, err error) {
	// Strict: the kernel then filters dumps by link, and acknowledgements do not echo the request.
	if request, err = dial(target, true, requestBuffer); err != nil {
		return nil, nil, errors.Wrap(err, "request socket with strict checking (Linux 4.20+)")
	}
	_ = request.SetOption(netlink.CapAcknowledge, true)
	if monitor, err = dial(target, false, monitorBuffer); err != nil {
		_ = request.Close()
		return nil, nil, err
	}
	for _, group := range monitorGroups {
		if err = monitor.JoinGroup(group); err != nil {
			_ = request.Close()
			_ = monitor.Close()
			return nil, nil, errors.Wrapf(err, "subscribing to rtnetlink group %d", group)
		}
	}
	return request, monitor, nil
}

func dial(target netns.NsHandle, strict bool, buffer int) (*netlink.Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(target), Strict: strict})
	if err != nil {
		return nil, errors.Wrap(err, "netlink socket")
	}
	// Forcing the size needs CAP_NET_ADMIN, which the forwarder has; without it the default is used.
	forced := false
	if raw, err := c.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, buffer) == nil
		})
	}
	if !forced {
		_ = c.SetReadBuffer(buffer)
	}
	return c, nil
}
