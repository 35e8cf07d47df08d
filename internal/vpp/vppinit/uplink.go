package vppinit

import (
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
)

// Uplink is the host link VPP takes over, with what VPP must learn about it.
type Uplink struct {
	Link      netlink.Link
	Addrs     []netlink.Addr
	Routes    []netlink.Route
	Neighbors []netlink.Neigh
}

// FindUplink returns the link holding tunnelIP or, when tunnelIP is nil, the link of the default
// route, read through handle (whose namespace is the node's).
func FindUplink(handle *netlink.Handle, tunnelIP net.IP) (*Uplink, error) {
	link, err := uplinkLink(handle, tunnelIP)
	if err != nil {
		return nil, err
	}
	name := link.Attrs().Name
	addrs, err := handle.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of uplink %s: %w", name, err)
	}
	routes, err := handle.RouteList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing the routes of uplink %s: %w", name, err)
	}
	neighbors, err := handle.NeighList(link.Attrs().Index, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing the neighbours of uplink %s: %w", name, err)
	}
	return &Uplink{Link: link, Addrs: addrs, Routes: routes, Neighbors: neighbors}, nil
}

func uplinkLink(handle *netlink.Handle, tunnelIP net.IP) (netlink.Link, error) {
	if tunnelIP == nil {
		return defaultRouteLink(handle)
	}
	addrs, err := handle.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	for _, addr := range addrs {
		if addr.IP.Equal(tunnelIP) {
			return handle.LinkByIndex(addr.LinkIndex)
		}
	}
	return nil, fmt.Errorf("no link holds the tunnel IP %s", tunnelIP)
}

// defaultRouteLink prefers an IPv4 default route, then an IPv6 one, as the node's own traffic does.
func defaultRouteLink(handle *netlink.Handle) (netlink.Link, error) {
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := handle.RouteList(nil, family)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, route := range routes {
			if isDefault(route) && route.LinkIndex > 0 {
				return handle.LinkByIndex(route.LinkIndex)
			}
		}
	}
	return nil, fmt.Errorf("no default route, and no tunnel IP to find the uplink by")
}

func isDefault(route netlink.Route) bool {
	if route.Dst == nil {
		return true
	}
	ones, _ := route.Dst.Mask.Size()
	return ones == 0
}

// TunnelIP returns tunnelIP when set, else the uplink's first global unicast address, IPv4 first.
func (u *Uplink) TunnelIP(tunnelIP net.IP) net.IP {
	if tunnelIP != nil {
		return tunnelIP
	}
	candidates := u.globalAddrs()
	slices.SortStableFunc(candidates, func(a, b netlink.Addr) int {
		return boolOrder(a.IP.To4() == nil) - boolOrder(b.IP.To4() == nil)
	})
	if len(candidates) == 0 {
		return nil
	}
	return candidates[0].IP
}

// globalAddrs are the addresses VPP gets: link-local ones stay with the kernel.
func (u *Uplink) globalAddrs() []netlink.Addr {
	var global []netlink.Addr
	for _, addr := range u.Addrs {
		if addr.IPNet != nil && addr.IP.IsGlobalUnicast() {
			global = append(global, addr)
		}
	}
	return global
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}
