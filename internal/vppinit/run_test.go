package vppinit_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/internal/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// node builds a namespace that looks like a node: uplink fcs-up0 with an IPv4 and an IPv6
// address, a default route and a gateway route through it, and a confirmed gateway neighbour.
// A second link, fcs-side0, holds another address and no default route. VPP runs in it.
func node(t *testing.T) (*netlink.Handle, *simVPP) {
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
	return handle, startVPP(t, ns)
}

func TestAfPacketUplinkFromDefaultRoute(t *testing.T) {
	handle, vpp := node(t)

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
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
	uplink := vpp.interfaceNamed(t, "host-fcs-up0")
	uplinkSwIfIndex := interface_types.InterfaceIndex(uplink.SwIfIndex)
	require.Equal(t, "fcs-up0", uplink.AfPacket.HostIfName, "VPP bound the node's uplink")
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
	require.ElementsMatch(t, addresses, uplink.Addresses)

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
	vppRoutes := map[string]string{}
	for _, route := range vpp.sim.State().Routes {
		require.Zero(t, route.TableID)
		require.Len(t, route.Paths, 1)
		require.Equal(t, uint32(uplinkSwIfIndex), route.Paths[0].SwIfIndex)
		vppRoutes[route.Prefix] = types.FromVppIPAddressUnion(route.Paths[0].Nh.Address, strings.Contains(route.Prefix, ":")).String()
	}
	require.Equal(t, routes, vppRoutes, "VPP's main tables hold exactly the copied routes")

	neighbors := sent[*ip_neighbor.IPNeighborAddDel](vpp)
	require.Len(t, neighbors, 1)
	require.Equal(t, "192.0.2.1", types.FromVppAddress(neighbors[0].Neighbor.IPAddress).String())
	require.Equal(t, "02:fc:00:00:00:99", neighbors[0].Neighbor.MacAddress.String())
	require.Equal(t, ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, neighbors[0].Neighbor.Flags)
	require.Equal(t, map[string]*state.Neighbor{
		state.NeighborKey(uplink.SwIfIndex, "192.0.2.1"): {
			SwIfIndex: uplink.SwIfIndex, IP: "192.0.2.1", MAC: "02:fc:00:00:00:99", Flags: uint8(ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC),
		},
	}, vpp.sim.State().Neighbors)

	acls := sent[*acl.ACLAddReplace](vpp)
	require.Len(t, acls, 2)
	aclLists := sent[*acl.ACLInterfaceSetACLList](vpp)
	require.Len(t, aclLists, 1)
	require.Equal(t, uplinkSwIfIndex, aclLists[0].SwIfIndex)
	require.Equal(t, uint8(1), aclLists[0].NInput, "one ingress ACL, then one egress ACL")
	ingress, egress := vpp.aclTagged(t, "nsm-vppinit-denyall-ingress"), vpp.aclTagged(t, "nsm-vppinit-denyall-egress")
	require.Equal(t, []uint32{ingress, egress}, aclLists[0].Acls)
	require.Equal(t, &state.ACLBinding{Input: []uint32{ingress}, Output: []uint32{egress}}, uplink.ACLs)

	names := vpp.names()
	require.Equal(t, "af_packet_create_v3", names[0], "the interface exists before it is configured")
	require.Less(t, indexOf(names, "acl_interface_set_acl_list"), indexOf(names, "sw_interface_set_flags"), "deny-all is in place before the uplink comes up")
	require.Equal(t, []string{"local0", "host-fcs-up0"}, vpp.interfaceNames())
}

func TestUplinkByTunnelIPWithCustomParams(t *testing.T) {
	handle, vpp := node(t)
	params := vppinit.DefaultParams()
	params.AfPacket.RxFrameSize = 2048
	params.AfPacket.NumRxQueues = 2

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, net.ParseIP("203.0.113.5"),
		vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params))
	require.NoError(t, err)
	require.Equal(t, "203.0.113.5", tunnelIP.String())

	creates := sent[*af_packet.AfPacketCreateV3](vpp)
	require.Len(t, creates, 1)
	require.Equal(t, "fcs-side0", creates[0].HostIfName, "the link holding the tunnel IP wins over the default-route link")
	require.Equal(t, uint32(2048), creates[0].RxFrameSize)
	require.Equal(t, uint16(2), creates[0].NumRxQueues)
}

// The simulator has no AF_XDP (it would need an XDP-capable driver): it answers as a VPP without
// the af_xdp plugin, which shows what is asked of VPP and that its refusal stops the init. Before
// VPP is asked, the node is prepared as the stock forwarder prepares it.
func TestAfXdpAsksVPPForAnXdpInterface(t *testing.T) {
	handle, vpp := jumboNode(t)
	params := vppinit.DefaultParams()
	params.AfXdp.Prog = xdpProgram(t)
	bpffs := filepath.Join(t.TempDir(), "bpf")
	t.Cleanup(func() { _ = unix.Unmount(bpffs, unix.MNT_DETACH) })

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfXdp, nil,
		vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params), vppinit.WithBPFFS(bpffs))
	require.ErrorIs(t, err, api.UNIMPLEMENTED)
	require.ErrorContains(t, err, "af_xdp_create_v3 on fcs-up0")
	require.Empty(t, sent[*af_packet.AfPacketCreateV3](vpp))
	creates := sent[*af_xdp.AfXdpCreateV3](vpp)
	require.Len(t, creates, 1)
	require.Equal(t, "fcs-up0", creates[0].HostIf)
	require.Equal(t, params.AfXdp.Prog, creates[0].Prog, "VPP attaches the forwarder's program, not its own")
	require.Equal(t, uint16(65535), creates[0].RxqNum, "a socket on every queue: the program redirects to the receiving queue's")
	require.Equal(t, params.AfXdp.RxqSize, creates[0].RxqSize)
	require.Equal(t, []string{"af_xdp_create_v3"}, vpp.names(), "nothing is configured on an interface VPP did not create")

	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(bpffs, &fs))
	require.Equal(t, int64(unix.BPF_FS_MAGIC), int64(fs.Type), "a BPF filesystem for the program's pinned maps")
	uplink, err := handle.LinkByName("fcs-up0")
	require.NoError(t, err)
	require.Equal(t, 3498, uplink.Attrs().MTU, "the stock forwarder's AF_XDP MTU")
	require.NotZero(t, uplink.Attrs().Promisc)
}

// Without a usable XDP program, AF_XDP stops before VPP or the node is touched.
func TestAfXdpWithoutItsProgramChangesNothing(t *testing.T) {
	handle, vpp := jumboNode(t)
	params := vppinit.DefaultParams()
	params.AfXdp.Prog = filepath.Join(t.TempDir(), "absent.o")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfXdp, nil,
		vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params), vppinit.WithBPFFS(filepath.Join(t.TempDir(), "bpf")))
	require.ErrorContains(t, err, "NSM_VPP_INIT=AF_XDP: XDP program "+params.AfXdp.Prog)
	require.Empty(t, vpp.names())
	uplink, err := handle.LinkByName("fcs-up0")
	require.NoError(t, err)
	require.Equal(t, 9000, uplink.Attrs().MTU)
	require.Zero(t, uplink.Attrs().Promisc)
}

func TestNoneTouchesNothingButDerivesTheTunnelIP(t *testing.T) {
	handle, vpp := node(t)

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.None, nil, vppinit.WithNetlinkHandle(handle))
	require.NoError(t, err)
	require.Equal(t, "192.0.2.10", tunnelIP.String())
	require.Empty(t, vpp.names())
	require.Equal(t, []string{"local0"}, vpp.interfaceNames())
}

func TestTunnelIPOnNoLinkIsAnError(t *testing.T) {
	handle, vpp := node(t)

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, net.ParseIP("192.0.2.77"), vppinit.WithNetlinkHandle(handle))
	require.ErrorContains(t, err, "no link holds the tunnel IP 192.0.2.77")
	require.Empty(t, vpp.names())
}

func TestNoDefaultRouteIsAnError(t *testing.T) {
	ns, handle := newTestNetns(t)
	addVeth(t, handle, "fcs-up0", "fcs-upp0")
	vpp := startVPP(t, ns)

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
	require.ErrorContains(t, err, "no default route")
	require.Empty(t, vpp.names())
}

// A VPP that cannot take the uplink (here: it lives in another namespace, where no such link
// exists) fails the init with the call and the link named.
func TestVPPErrorNamesTheCall(t *testing.T) {
	handle, _ := node(t)
	elsewhere, _ := newTestNetns(t)
	vpp := startVPP(t, elsewhere)

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
	require.ErrorIs(t, err, api.INVALID_INTERFACE)
	require.ErrorContains(t, err, "af_packet_create_v3 on fcs-up0")
	require.Equal(t, []string{"af_packet_create_v3"}, vpp.names(), "nothing is configured on an interface that was not created")
	require.Equal(t, []string{"local0"}, vpp.interfaceNames())
}

func indexOf(names []string, name string) int {
	for i, candidate := range names {
		if candidate == name {
			return i
		}
	}
	return -1
}
