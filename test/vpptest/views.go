package vpptest

import (
	"context"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// The views read VPP's state through its API, on the connection's unrecorded side: what they
// ask is not among Requests.

const viewTimeout = 10 * time.Second

// Interface is one interface as sw_interface_dump reports it.
type Interface struct {
	SwIfIndex uint32
	Name      string
	DevType   string
	Tag       string
	Type      interface_types.IfType
	Sub       bool
	AdminUp   bool
	LinkUp    bool
	MAC       string
	// MTU is VPP's per-protocol MTU: L3, IPv4, IPv6, MPLS.
	MTU     [4]uint32
	LinkMTU uint16
}

// receiver is a generated dump client's stream.
type receiver[R any] interface {
	Recv() (R, error)
}

// collect drains a dump, failing the test on an error.
func collect[R any](t testing.TB, what string, stream receiver[R], err error) []R {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var all []R
	if err := vppdump.Drain(stream.Recv, what, func(details R) { all = append(all, details) }); err != nil {
		t.Fatal(err)
	}
	return all
}

func viewContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), viewTimeout)
}

// Interfaces lists VPP's interfaces in sw_if_index order.
func (v *VPP) Interfaces(t testing.TB) []Interface {
	t.Helper()
	ctx, cancel := viewContext()
	defer cancel()
	stream, err := interfaces.NewServiceClient(v.Conn.Connection).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	var found []Interface
	for _, d := range collect(t, "sw_interface_dump", stream, err) {
		found = append(found, Interface{
			SwIfIndex: uint32(d.SwIfIndex), Name: d.InterfaceName, DevType: d.InterfaceDevType, Tag: d.Tag, Type: d.Type,
			Sub:     d.Type == interface_types.IF_API_TYPE_SUB,
			AdminUp: d.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0,
			LinkUp:  d.Flags&interface_types.IF_STATUS_API_FLAG_LINK_UP != 0,
			MAC:     d.L2Address.String(), LinkMTU: d.LinkMtu,
			MTU: [4]uint32{d.Mtu[0], d.Mtu[1], d.Mtu[2], d.Mtu[3]},
		})
	}
	sort.Slice(found, func(a, b int) bool { return found[a].SwIfIndex < found[b].SwIfIndex })
	return found
}

// InterfaceNames lists VPP's interfaces by name, in sw_if_index order.
func (v *VPP) InterfaceNames(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, i := range v.Interfaces(t) {
		names = append(names, i.Name)
	}
	return names
}

// InterfaceNamed returns VPP's interface of that name; the test fails when there is none.
func (v *VPP) InterfaceNamed(t testing.TB, name string) Interface {
	t.Helper()
	for _, i := range v.Interfaces(t) {
		if i.Name == name {
			return i
		}
	}
	t.Fatalf("%s has no interface %s", v.Backend, name)
	return Interface{}
}

// Addresses lists an interface's IPv4 and IPv6 addresses in CIDR form, sorted.
func (v *VPP) Addresses(t testing.TB, swIfIndex uint32) []string {
	t.Helper()
	var found []string
	for _, ipv6 := range []bool{false, true} {
		ctx, cancel := viewContext()
		stream, err := ip.NewServiceClient(v.Conn.Connection).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: interface_types.InterfaceIndex(swIfIndex), IsIPv6: ipv6})
		for _, d := range collect(t, "ip_address_dump", stream, err) {
			found = append(found, types.FromVppAddressWithPrefix(d.Prefix).String())
		}
		cancel()
	}
	sort.Strings(found)
	return found
}

// Route is one route of a FIB table as ip_route_dump reports it.
type Route struct {
	Prefix string
	Paths  []RoutePath
}

// RoutePath is one path of a route.
type RoutePath struct {
	SwIfIndex uint32
	// NextHop is the path's next hop; "" for none (all zeros).
	NextHop string
	// Type is normal for a forwarding path; VPP's own routes have drop and local paths.
	Type fib_types.FibPathType
}

// Routes lists the routes of table (0: the main table) of both address families, VPP's own
// included (a real VPP's tables hold special routes: drop, multicast, local, connected).
func (v *VPP) Routes(t testing.TB, table uint32) []Route {
	t.Helper()
	var found []Route
	for _, ipv6 := range []bool{false, true} {
		ctx, cancel := viewContext()
		stream, err := ip.NewServiceClient(v.Conn.Connection).IPRouteDump(ctx, &ip.IPRouteDump{Table: ip.IPTable{TableID: table, IsIP6: ipv6}})
		for _, d := range collect(t, "ip_route_dump", stream, err) {
			// Masked: VPP reports a connected prefix with the interface's address in it.
			prefix := types.FromVppPrefix(d.Route.Prefix)
			route := Route{Prefix: (&net.IPNet{IP: prefix.IP.Mask(prefix.Mask), Mask: prefix.Mask}).String()}
			for _, path := range d.Route.Paths {
				nextHop := types.FromVppIPAddressUnion(path.Nh.Address, ipv6)
				hop := ""
				if !nextHop.IsUnspecified() {
					hop = nextHop.String()
				}
				route.Paths = append(route.Paths, RoutePath{SwIfIndex: path.SwIfIndex, NextHop: hop, Type: path.Type})
			}
			found = append(found, route)
		}
		cancel()
	}
	return found
}

// Neighbor is one IP neighbour entry.
type Neighbor struct {
	SwIfIndex uint32
	IP, MAC   string
	Flags     ip_neighbor.IPNeighborFlags
}

// Neighbors lists the IPv4 and IPv6 neighbours of an interface.
func (v *VPP) Neighbors(t testing.TB, swIfIndex uint32) []Neighbor {
	t.Helper()
	var found []Neighbor
	for _, af := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		ctx, cancel := viewContext()
		stream, err := ip_neighbor.NewServiceClient(v.Conn.Connection).IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{
			SwIfIndex: interface_types.InterfaceIndex(swIfIndex), Af: af,
		})
		for _, d := range collect(t, "ip_neighbor_dump", stream, err) {
			found = append(found, Neighbor{
				SwIfIndex: uint32(d.Neighbor.SwIfIndex), IP: types.FromVppAddress(d.Neighbor.IPAddress).String(),
				MAC: d.Neighbor.MacAddress.String(), Flags: d.Neighbor.Flags,
			})
		}
		cancel()
	}
	return found
}

// ACLTagged returns the index of the ACL carrying tag; the test fails when there is none.
func (v *VPP) ACLTagged(t testing.TB, tag string) uint32 {
	t.Helper()
	ctx, cancel := viewContext()
	defer cancel()
	stream, err := acl.NewServiceClient(v.Conn.Connection).ACLDump(ctx, &acl.ACLDump{ACLIndex: ^uint32(0)})
	for _, d := range collect(t, "acl_dump", stream, err) {
		if d.Tag == tag {
			return d.ACLIndex
		}
	}
	t.Fatalf("%s has no ACL tagged %s", v.Backend, tag)
	return 0
}

// InterfaceACLs returns the input and output ACL lists applied to an interface.
func (v *VPP) InterfaceACLs(t testing.TB, swIfIndex uint32) (input, output []uint32) {
	t.Helper()
	ctx, cancel := viewContext()
	defer cancel()
	stream, err := acl.NewServiceClient(v.Conn.Connection).ACLInterfaceListDump(ctx, &acl.ACLInterfaceListDump{SwIfIndex: interface_types.InterfaceIndex(swIfIndex)})
	for _, d := range collect(t, "acl_interface_list_dump", stream, err) {
		if uint32(d.SwIfIndex) == swIfIndex {
			return d.Acls[:d.NInput], d.Acls[d.NInput:]
		}
	}
	return nil, nil
}

// AfPacketHosts maps each af_packet interface's sw_if_index to the host interface it is bound to.
func (v *VPP) AfPacketHosts(t testing.TB) map[uint32]string {
	t.Helper()
	ctx, cancel := viewContext()
	defer cancel()
	stream, err := af_packet.NewServiceClient(v.Conn.Connection).AfPacketDump(ctx, &af_packet.AfPacketDump{})
	hosts := map[uint32]string{}
	for _, d := range collect(t, "af_packet_dump", stream, err) {
		hosts[uint32(d.SwIfIndex)] = d.HostIfName
	}
	return hosts
}
