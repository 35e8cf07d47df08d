package vppinit

import (
	"context"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
)

// configureUplink mirrors the host link into VPP: MTU, a deny-all ACL (tunnel pinholes are opened
// per connection), admin up, neighbours, global addresses and routes.
func configureUplink(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, uplink *Uplink) error {
	steps := []func() error{
		func() error { return setMtu(ctx, vppConn, swIfIndex, uplink.Link.Attrs().MTU) },
		func() error { return denyAllOnUplink(ctx, vppConn, swIfIndex) },
		func() error { return setAdminUp(ctx, vppConn, swIfIndex) },
		func() error { return addNeighbors(ctx, vppConn, swIfIndex, uplink.Neighbors) },
		func() error { return addAddresses(ctx, vppConn, swIfIndex, uplink.globalAddrs()) },
		func() error { return addRoutes(ctx, vppConn, swIfIndex, uplink.Routes) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func setMtu(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, mtu int) error {
	// One value per protocol (L3, IPv4, IPv6, MPLS): the uplink carries them all at the link MTU.
	request := &interfaces.SwInterfaceSetMtu{SwIfIndex: swIfIndex, Mtu: []uint32{uint32(mtu), uint32(mtu), uint32(mtu), uint32(mtu)}}
	return timed(ctx, "SwInterfaceSetMtu", func() error {
		_, err := interfaces.NewServiceClient(vppConn).SwInterfaceSetMtu(ctx, request)
		return err
	})
}

func setMacAddress(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, mac net.HardwareAddr) error {
	request := &interfaces.SwInterfaceSetMacAddress{SwIfIndex: swIfIndex, MacAddress: types.ToVppMacAddress(&mac)}
	return timed(ctx, "SwInterfaceSetMacAddress", func() error {
		_, err := interfaces.NewServiceClient(vppConn).SwInterfaceSetMacAddress(ctx, request)
		return err
	})
}

func setAdaptiveRxMode(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex) error {
	request := &interfaces.SwInterfaceSetRxMode{SwIfIndex: swIfIndex, Mode: interface_types.RX_MODE_API_ADAPTIVE}
	return timed(ctx, "SwInterfaceSetRxMode", func() error {
		_, err := interfaces.NewServiceClient(vppConn).SwInterfaceSetRxMode(ctx, request)
		return err
	})
}

func setAdminUp(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex) error {
	request := &interfaces.SwInterfaceSetFlags{SwIfIndex: swIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}
	return timed(ctx, "SwInterfaceSetFlags", func() error {
		_, err := interfaces.NewServiceClient(vppConn).SwInterfaceSetFlags(ctx, request)
		return err
	})
}

// addNeighbors copies the entries the kernel has confirmed, so that VPP can send before it has
// resolved anything itself.
func addNeighbors(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, neighbors []netlink.Neigh) error {
	for _, neighbor := range neighbors {
		if neighbor.State&(netlink.NUD_PERMANENT|netlink.NUD_REACHABLE) == 0 || neighbor.IP == nil || len(neighbor.HardwareAddr) == 0 {
			continue
		}
		request := &ip_neighbor.IPNeighborAddDel{
			IsAdd: true,
			Neighbor: ip_neighbor.IPNeighbor{
				SwIfIndex:  swIfIndex,
				Flags:      ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC,
				MacAddress: types.ToVppMacAddress(&neighbor.HardwareAddr),
				IPAddress:  types.ToVppAddress(neighbor.IP),
			},
		}
		err := timed(ctx, "IPNeighborAddDel", func() error {
			_, err := ip_neighbor.NewServiceClient(vppConn).IPNeighborAddDel(ctx, request)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func addAddresses(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, addrs []netlink.Addr) error {
	for _, addr := range addrs {
		request := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: swIfIndex, IsAdd: true, Prefix: types.ToVppAddressWithPrefix(addr.IPNet)}
		err := timed(ctx, "SwInterfaceAddDelAddress", func() error {
			_, err := interfaces.NewServiceClient(vppConn).SwInterfaceAddDelAddress(ctx, request)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// addRoutes copies the link's routes: gateway routes through their next hop, on-link routes (a
// /32 gateway such as Calico's 169.254.1.1) as attached. IPv6 link-local and multicast
// destinations are VPP's own business.
func addRoutes(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex, routes []netlink.Route) error {
	for _, route := range routes {
		dst := routeDst(route)
		if dst == nil || dst.IP.IsLinkLocalUnicast() || dst.IP.IsMulticast() {
			continue
		}
		path := fib_types.FibPath{
			SwIfIndex: uint32(swIfIndex),
			Weight:    1,
			Type:      fib_types.FIB_API_PATH_TYPE_NORMAL,
			Proto:     types.IsV6toFibProto(dst.IP.To4() == nil),
		}
		if route.Gw != nil {
			path.Proto = types.IsV6toFibProto(route.Gw.To4() == nil)
			path.Nh.Address = types.ToVppAddress(route.Gw).Un
		}
		request := &ip.IPRouteAddDel{
			IsAdd: true,
			Route: ip.IPRoute{Prefix: types.ToVppPrefix(dst), NPaths: 1, Paths: []fib_types.FibPath{path}},
		}
		err := timed(ctx, "IPRouteAddDel", func() error {
			_, err := ip.NewServiceClient(vppConn).IPRouteAddDel(ctx, request)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// routeDst returns the route's destination, with the default route spelled out for its family.
func routeDst(route netlink.Route) *net.IPNet {
	if route.Dst != nil {
		return route.Dst
	}
	switch {
	case route.Gw != nil && route.Gw.To4() == nil:
		return &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	case route.Gw != nil || route.Family == netlink.FAMILY_V4:
		return &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	case route.Family == netlink.FAMILY_V6:
		return &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	}
	return nil
}

// timed runs one VPP call and logs its duration, as every sdk-vpp element does.
func timed(ctx context.Context, vppAPI string, call func() error) error {
	start := time.Now()
	err := call()
	log.FromContext(ctx).WithField("vppapi", vppAPI).WithField("duration", time.Since(start)).Debug("completed")
	return err
}
