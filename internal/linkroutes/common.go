package linkroutes

import (
	"context"
	"net"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	kernellink "github.com/networkservicemesh/sdk-kernel/pkg/kernel"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

const mainTable = unix.RT_TABLE_MAIN

// kernelInterface opens the connection's namespace and finds its interface. It returns a nil
// handle, and no error, for connections this element has nothing to do with.
func kernelInterface(conn *networkservice.Connection) (*netlink.Handle, netlink.Link, error) {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil || mechanism.GetVLAN() != 0 {
		return nil, nil, nil
	}
	handle, err := kernellink.GetNetlinkHandle(mechanism.GetNetNSURL())
	if err != nil {
		return nil, nil, err
	}
	link, err := handle.LinkByName(mechanism.GetInterfaceName())
	if err != nil {
		handle.Close()
		return nil, nil, errors.Wrapf(err, "finding interface %s", mechanism.GetInterfaceName())
	}
	return handle, link, nil
}

// reconcile brings the marked main-table routes through the connection's interface to the desired
// set, writing only the difference.
func reconcile(ctx context.Context, conn *networkservice.Connection, isClient bool, protocol netlink.RouteProtocol) error {
	handle, link, err := kernelInterface(conn)
	if err != nil || handle == nil {
		return err
	}
	defer handle.Close()

	desired, err := desiredRoutes(conn.GetContext().GetIpContext(), isClient, link.Attrs().Index, protocol)
	if err != nil {
		return err
	}
	actual, err := markedRoutes(handle, link, protocol)
	if err != nil {
		return err
	}
	if len(desired) > 0 && link.Attrs().Flags&net.FlagUp == 0 {
		if err := handle.LinkSetUp(link); err != nil {
			return errors.Wrapf(err, "setting %s up", link.Attrs().Name)
		}
	}
	for i := range actual {
		route := &actual[i]
		if want, ok := desired[route.Dst.String()]; ok && sameRoute(want, route) {
			delete(desired, route.Dst.String())
			continue
		}
		if _, ok := desired[route.Dst.String()]; ok {
			continue // replaced below, in one write
		}
		if err := handle.RouteDel(route); err != nil && !errors.Is(err, unix.ESRCH) {
			return errors.Wrapf(err, "deleting stale route %s via %s", route.Dst, link.Attrs().Name)
		}
		log.FromContext(ctx).WithField("linkroutes", "RouteDel").Debugf("%s dev %s", route.Dst, link.Attrs().Name)
	}
	for _, route := range desired {
		if err := handle.RouteReplace(route); err != nil {
			return errors.Wrapf(err, "installing route %s via %s", route.Dst, link.Attrs().Name)
		}
		log.FromContext(ctx).WithField("linkroutes", "RouteReplace").Debugf("%s gw %v dev %s", route.Dst, route.Gw, link.Attrs().Name)
	}
	return nil
}

// removeAll deletes every marked route through the connection's interface.
func removeAll(conn *networkservice.Connection, protocol netlink.RouteProtocol) error {
	handle, link, err := kernelInterface(conn)
	if err != nil || handle == nil {
		return err
	}
	defer handle.Close()
	actual, err := markedRoutes(handle, link, protocol)
	if err != nil {
		return err
	}
	for i := range actual {
		if err := handle.RouteDel(&actual[i]); err != nil && !errors.Is(err, unix.ESRCH) {
			return errors.Wrapf(err, "deleting route %s via %s", actual[i].Dst, link.Attrs().Name)
		}
	}
	return nil
}

func markedRoutes(handle *netlink.Handle, link netlink.Link, protocol netlink.RouteProtocol) ([]netlink.Route, error) {
	filter := &netlink.Route{LinkIndex: link.Attrs().Index, Table: mainTable, Protocol: protocol}
	routes, err := handle.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, errors.Wrapf(err, "listing routes via %s", link.Attrs().Name)
	}
	return routes, nil
}

// sameRoute compares what this element sets. IPv6 routes have no scope in the kernel (it reports
// universe for all of them), so scope only counts for IPv4.
func sameRoute(want, have *netlink.Route) bool {
	if want.Dst.IP.To4() != nil && want.Scope != have.Scope {
		return false
	}
	return want.Gw.Equal(have.Gw) && want.Flags&int(netlink.FLAG_ONLINK) == have.Flags&int(netlink.FLAG_ONLINK)
}
