package vppinit_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// node builds a namespace that looks like a node: uplink fcs-up0 with an IPv4 and an IPv6
// address, a default route and a gateway route through it, and a confirmed gateway neighbour.
// A second link, fcs-side0, holds another address and no default route. A VPP of backend runs
// in it.
func node(t *testing.T, backend vpptest.Backend) (*netlink.Handle, *vpptest.VPP) {
	ns, handle := newTestNetns(t)
	uplink := addVeth(t, handle, "fcs-up0", "fcs-upp0")
	require.NoError(t, handle.AddrAdd(uplink, &netlink.Addr{IPNet: mustCIDR(t, "192.0.2.10/24")}))
	require.NoError(t, handle.AddrAdd(uplink, &netlink.Addr{IPNet: mustCIDR(t, "2001:db8::10/64"), Flags: 0x80 /* IFA_F_NODAD */}))
	require.NoError(t, handle.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Gw: net.ParseIP("192.0.2.1")}))
	require.NoError(t, handle.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Dst: mustCIDR(t, "198.51.100.0/24"), Gw: net.ParseIP("192.0.2.254")}))
	gatewayMAC, err := net.ParseMAC("02:fc:00:00:00:99")
	require.NoError(t, err)
	require.NoError(t, handle.NeighAdd(&netlink.Neigh{
		LinkIndex: uplink.Attrs().Index, IP: net.ParseIP("192.0.2.1"), HardwareAddr: gatewayMAC, State: netlink.NUD_PERMANENT,
	}))

	side := addVeth(t, handle, "fcs-side0", "fcs-sidep0")
	require.NoError(t, handle.AddrAdd(side, &netlink.Addr{IPNet: mustCIDR(t, "203.0.113.5/24")}))
	return handle, startVPP(t, backend, ns)
}

func TestAfPacketUplinkFromDefaultRoute(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)

		tunnelIP, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
		require.NoError(t, err)
		require.Equal(t, "192.0.2.10", tunnelIP.String(), "derived: the uplink's first global IPv4 address")

		creates := sent[*af_packet.AfPacketCreateV3](vpp)
		require.Len(t, creates, 1)
		require.Equal(t, "fcs-up0", creates[0].HostIfName)
		require.Equal(t, "02:fc:00:00:00:01", creates[0].HwAddr.String())
		defaults := vppinit.DefaultParams().AfPacket
		require.Equal(t, defaults.Mode, creates[0].Mode)
		require.Equal(t, defaults.RxFrameSize, creates[0].RxFrameSize)
		require.Equal(t, defaults.Flags, creates[0].Flags)
		uplink := vpp.InterfaceNamed(t, "host-fcs-up0")
		uplinkSwIfIndex := interface_types.InterfaceIndex(uplink.SwIfIndex)
		require.Equal(t, "fcs-up0", vpp.AfPacketHosts(t)[uplink.SwIfIndex], "VPP bound the node's uplink")
		require.Equal(t, "02:fc:00:00:00:01", uplink.MAC)

		mtus := sent[*interfaces.SwInterfaceSetMtu](vpp)
		require.Len(t, mtus, 1)
		require.Equal(t, []uint32{1450, 1450, 1450, 1450}, mtus[0].Mtu)
		require.Equal(t, uplinkSwIfIndex, mtus[0].SwIfIndex)
		require.Equal(t, [4]uint32{1450, 1450, 1450, 1450}, uplink.MTU)

		flags := sent[*interfaces.SwInterfaceSetFlags](vpp)
		require.Len(t, flags, 1)
		require.Equal(t, interface_types.IF_STATUS_API_FLAG_ADMIN_UP, flags[0].Flags)
		require.True(t, uplink.AdminUp)

		var addresses []string
		for _, request := range sent[*interfaces.SwInterfaceAddDelAddress](vpp) {
			require.True(t, request.IsAdd)
			require.Equal(t, uplinkSwIfIndex, request.SwIfIndex)
			addresses = append(addresses, types.FromVppAddressWithPrefix(request.Prefix).String())
		}
		require.ElementsMatch(t, []string{"192.0.2.10/24", "2001:db8::10/64"}, addresses, "global addresses only, not fe80::")
		require.ElementsMatch(t, addresses, vpp.Addresses(t, uplink.SwIfIndex))

		routes := map[string]string{}
		for _, request := range sent[*ip.IPRouteAddDel](vpp) {
			require.True(t, request.IsAdd)
			require.Len(t, request.Route.Paths, 1)
			path := request.Route.Paths[0]
			require.Equal(t, uint32(uplinkSwIfIndex), path.SwIfIndex)
			prefix := types.FromVppPrefix(request.Route.Prefix)
			routes[prefix.String()] = types.FromVppIPAddressUnion(path.Nh.Address, prefix.IP.To4() == nil).String()
		}
		require.Equal(t, "192.0.2.1", routes["0.0.0.0/0"])
		require.Equal(t, "192.0.2.254", routes["198.51.100.0/24"])
		require.Contains(t, routes, "192.0.2.0/24", "the connected route is copied as attached")
		require.Contains(t, routes, "2001:db8::/64")
		for prefix := range routes {
			require.NotContains(t, prefix, "fe80", "link-local routes are VPP's own")
			require.NotContains(t, prefix, "203.0.113", "routes of other links are not copied")
		}
		requireRoutesThrough(t, vpp, uplink.SwIfIndex, routes)

		neighbors := sent[*ip_neighbor.IPNeighborAddDel](vpp)
		require.Len(t, neighbors, 1)
		require.Equal(t, "192.0.2.1", types.FromVppAddress(neighbors[0].Neighbor.IPAddress).String())
		require.Equal(t, "02:fc:00:00:00:99", neighbors[0].Neighbor.MacAddress.String())
		require.Equal(t, ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, neighbors[0].Neighbor.Flags)
		require.Equal(t, []vpptest.Neighbor{
			{SwIfIndex: uplink.SwIfIndex, IP: "192.0.2.1", MAC: "02:fc:00:00:00:99", Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC},
		}, vpp.Neighbors(t, uplink.SwIfIndex))

		acls := sent[*acl.ACLAddReplace](vpp)
		require.Len(t, acls, 2)
		aclLists := sent[*acl.ACLInterfaceSetACLList](vpp)
		require.Len(t, aclLists, 1)
		require.Equal(t, uplinkSwIfIndex, aclLists[0].SwIfIndex)
		require.Equal(t, uint8(1), aclLists[0].NInput, "one ingress ACL, then one egress ACL")
		ingress, egress := vpp.ACLTagged(t, "nsm-vppinit-denyall-ingress"), vpp.ACLTagged(t, "nsm-vppinit-denyall-egress")
		require.Equal(t, []uint32{ingress, egress}, aclLists[0].Acls)
		input, output := vpp.InterfaceACLs(t, uplink.SwIfIndex)
		require.Equal(t, []uint32{ingress}, input)
		require.Equal(t, []uint32{egress}, output)

		names := vpp.Names()
		require.Equal(t, "af_packet_create_v3", names[0], "the interface exists before it is configured")
		require.Less(t, indexOf(names, "acl_interface_set_acl_list"), indexOf(names, "sw_interface_set_flags"), "deny-all is in place before the uplink comes up")
		require.Equal(t, []string{"local0", "host-fcs-up0"}, vpp.InterfaceNames(t))
	})
}

// requireRoutesThrough requires VPP's main tables to route each prefix of want through the
// uplink, to the next hop want says (an attached route has none), and to route nothing else
// through the uplink to a next hop: the gateway routes are exactly the copied ones. A real VPP
// adds routes of its own: for each address (the connected prefix, the address itself: no next
// hop, or a local path) and a host route to each neighbour, through itself.
func requireRoutesThrough(t *testing.T, vpp *vpptest.VPP, uplink uint32, want map[string]string) {
	t.Helper()
	gateways := map[string]string{}
	for prefix, nextHop := range want {
		if nextHop != "0.0.0.0" && nextHop != "::" {
			gateways[prefix] = nextHop
		}
	}
	found := map[string]bool{}
	gotGateways := map[string]string{}
	routes := vpp.Routes(t, 0)
	for _, route := range routes {
		for _, path := range route.Paths {
			if path.SwIfIndex != uplink || path.Type != fib_types.FIB_API_PATH_TYPE_NORMAL {
				continue
			}
			found[route.Prefix] = true
			if path.NextHop != "" && route.Prefix != hostPrefix(path.NextHop) {
				gotGateways[route.Prefix] = path.NextHop
			}
		}
	}
	for prefix := range want {
		require.True(t, found[prefix], "VPP has no route to %s through the uplink: %+v", prefix, routes)
	}
	require.Equal(t, gateways, gotGateways, "routes through the uplink to a next hop")
}

func hostPrefix(address string) string {
	ip := net.ParseIP(address)
	bits := 8 * len(ip.To4())
	if bits == 0 {
		bits = 128
	}
	return (&net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}).String()
}

func TestUplinkByTunnelIPWithCustomParams(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)
		params := vppinit.DefaultParams()
		params.AfPacket.RxFrameSize = 2048
		params.AfPacket.NumRxQueues = 2

		tunnelIP, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, net.ParseIP("203.0.113.5"),
			vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params))
		require.NoError(t, err)
		require.Equal(t, "203.0.113.5", tunnelIP.String())

		creates := sent[*af_packet.AfPacketCreateV3](vpp)
		require.Len(t, creates, 1)
		require.Equal(t, "fcs-side0", creates[0].HostIfName, "the link holding the tunnel IP wins over the default-route link")
		require.Equal(t, uint32(2048), creates[0].RxFrameSize)
		require.Equal(t, uint16(2), creates[0].NumRxQueues)
		require.Equal(t, "fcs-side0", vpp.AfPacketHosts(t)[vpp.InterfaceNamed(t, "host-fcs-side0").SwIfIndex])
	})
}

// Neither VPP here has AF_XDP: the simulator cannot (it would need an XDP-capable driver) and
// the real build has no af_xdp plugin (docs/vpp.md). Its messages are unknown to both, which shows
// what is asked of VPP and that the refusal stops the init with the call named before anything is
// configured in VPP. Before VPP is asked, the node is prepared as the stock forwarder prepares it.
func TestAfXdpAsksVPPForAnXdpInterface(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := jumboNode(t, backend)
		params := vppinit.DefaultParams()
		params.AfXdp.Prog = xdpProgram(t)
		bpffs := filepath.Join(t.TempDir(), "bpf")
		t.Cleanup(func() { _ = unix.Unmount(bpffs, unix.MNT_DETACH) })

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfXdp, nil,
			vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params), vppinit.WithBPFFS(bpffs))
		var unknown *adapter.UnknownMsgError
		require.ErrorAs(t, err, &unknown, "VPP without the af_xdp plugin does not know its messages")
		require.ErrorContains(t, err, "af_xdp_create_v3 on fcs-up0")
		require.Empty(t, sent[*af_packet.AfPacketCreateV3](vpp))
		creates := sent[*af_xdp.AfXdpCreateV3](vpp)
		require.Len(t, creates, 1)
		require.Equal(t, "fcs-up0", creates[0].HostIf)
		require.Equal(t, params.AfXdp.Prog, creates[0].Prog, "VPP attaches the forwarder's program, not its own")
		require.Equal(t, uint16(65535), creates[0].RxqNum, "a socket on every queue: the program redirects to the receiving queue's")
		require.Equal(t, params.AfXdp.RxqSize, creates[0].RxqSize)
		require.Equal(t, []string{"af_xdp_create_v3"}, vpp.Names(), "nothing is configured on an interface VPP did not create")
		require.Equal(t, []string{"local0"}, vpp.InterfaceNames(t))

		var fs unix.Statfs_t
		require.NoError(t, unix.Statfs(bpffs, &fs))
		require.Equal(t, int64(unix.BPF_FS_MAGIC), int64(fs.Type), "a BPF filesystem for the program's pinned maps")
		uplink, err := handle.LinkByName("fcs-up0")
		require.NoError(t, err)
		require.Equal(t, 3498, uplink.Attrs().MTU, "the stock forwarder's AF_XDP MTU")
		require.NotZero(t, uplink.Attrs().Promisc)
	})
}

// Without a usable XDP program, AF_XDP stops before VPP or the node is touched.
func TestAfXdpWithoutItsProgramChangesNothing(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := jumboNode(t, backend)
		params := vppinit.DefaultParams()
		params.AfXdp.Prog = filepath.Join(t.TempDir(), "absent.o")

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfXdp, nil,
			vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params), vppinit.WithBPFFS(filepath.Join(t.TempDir(), "bpf")))
		require.ErrorContains(t, err, "NSM_VPP_INIT=AF_XDP: XDP program "+params.AfXdp.Prog)
		require.Empty(t, vpp.Names())
		uplink, err := handle.LinkByName("fcs-up0")
		require.NoError(t, err)
		require.Equal(t, 9000, uplink.Attrs().MTU)
		require.Zero(t, uplink.Attrs().Promisc)
	})
}

func TestNoneTouchesNothingButDerivesTheTunnelIP(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)

		tunnelIP, err := vppinit.Run(context.Background(), vpp, vppinit.None, nil, vppinit.WithNetlinkHandle(handle))
		require.NoError(t, err)
		require.Equal(t, "192.0.2.10", tunnelIP.String())
		require.Empty(t, vpp.Names())
		require.Equal(t, []string{"local0"}, vpp.InterfaceNames(t))
	})
}

func TestTunnelIPOnNoLinkIsAnError(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, net.ParseIP("192.0.2.77"), vppinit.WithNetlinkHandle(handle))
		require.ErrorContains(t, err, "no link holds the tunnel IP 192.0.2.77")
		require.Empty(t, vpp.Names())
	})
}

func TestNoDefaultRouteIsAnError(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		ns, handle := newTestNetns(t)
		addVeth(t, handle, "fcs-up0", "fcs-upp0")
		vpp := startVPP(t, backend, ns)

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
		require.ErrorContains(t, err, "no default route")
		require.Empty(t, vpp.Names())
	})
}

// A VPP that cannot take the uplink (here: it lives in another namespace, where no such link
// exists) fails the init with the call and the link named.
func TestVPPErrorNamesTheCall(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, _ := node(t, vpptest.Sim)
		elsewhere, _ := newTestNetns(t)
		vpp := startVPP(t, backend, elsewhere)

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
		require.ErrorIs(t, err, api.INVALID_INTERFACE)
		require.ErrorContains(t, err, "af_packet_create_v3 on fcs-up0")
		require.Equal(t, []string{"af_packet_create_v3"}, vpp.Names(), "nothing is configured on an interface that was not created")
		require.Equal(t, []string{"local0"}, vpp.InterfaceNames(t))
	})
}

func indexOf(names []string, name string) int {
	for i, candidate := range names {
		if candidate == name {
			return i
		}
	}
	return -1
}
