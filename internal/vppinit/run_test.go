package vppinit_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/internal/vppinit"
)

// node builds a namespace that looks like a node: uplink fcmd-up0 with an IPv4 and an IPv6
// address, a default route and a gateway route through it, and a confirmed gateway neighbour.
// A second link, fcmd-side0, holds another address and no default route.
func node(t *testing.T) *netlink.Handle {
	handle := newTestNetns(t)
	uplink := addVeth(t, handle, "fcmd-up0", "fcmd-upp0")
	require.NoError(t, handle.AddrAdd(uplink, &netlink.Addr{IPNet: mustCIDR(t, "192.0.2.10/24")}))
	require.NoError(t, handle.AddrAdd(uplink, &netlink.Addr{IPNet: mustCIDR(t, "2001:db8::10/64"), Flags: 0x80 /* IFA_F_NODAD */}))
	require.NoError(t, handle.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Gw: net.ParseIP("192.0.2.1")}))
	require.NoError(t, handle.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Dst: mustCIDR(t, "198.51.100.0/24"), Gw: net.ParseIP("192.0.2.254")}))
	gatewayMAC, err := net.ParseMAC("02:fc:00:00:00:99")
	require.NoError(t, err)
	require.NoError(t, handle.NeighAdd(&netlink.Neigh{
		LinkIndex: uplink.Attrs().Index, IP: net.ParseIP("192.0.2.1"), HardwareAddr: gatewayMAC, State: netlink.NUD_PERMANENT,
	}))

	side := addVeth(t, handle, "fcmd-side0", "fcmd-sidep0")
	require.NoError(t, handle.AddrAdd(side, &netlink.Addr{IPNet: mustCIDR(t, "203.0.113.5/24")}))
	return handle
}

func TestAfPacketUplinkFromDefaultRoute(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
	require.NoError(t, err)
	require.Equal(t, "192.0.2.10", tunnelIP.String(), "derived: the uplink's first global IPv4 address")

	creates := sent[*af_packet.AfPacketCreateV3](vpp)
	require.Len(t, creates, 1)
	require.Equal(t, "fcmd-up0", creates[0].HostIfName)
	require.Equal(t, "02:fc:00:00:00:01", creates[0].HwAddr.String())
	defaults := vppinit.DefaultParams().AfPacket
	require.Equal(t, defaults.Mode, creates[0].Mode)
	require.Equal(t, defaults.RxFrameSize, creates[0].RxFrameSize)
	require.Equal(t, defaults.Flags, creates[0].Flags)

	mtus := sent[*interfaces.SwInterfaceSetMtu](vpp)
	require.Len(t, mtus, 1)
	require.Equal(t, []uint32{1450, 1450, 1450, 1450}, mtus[0].Mtu)
	require.Equal(t, uplinkSwIfIndex, mtus[0].SwIfIndex)

	flags := sent[*interfaces.SwInterfaceSetFlags](vpp)
	require.Len(t, flags, 1)
	require.Equal(t, interface_types.IF_STATUS_API_FLAG_ADMIN_UP, flags[0].Flags)

	var addresses []string
	for _, request := range sent[*interfaces.SwInterfaceAddDelAddress](vpp) {
		require.True(t, request.IsAdd)
		require.Equal(t, uplinkSwIfIndex, request.SwIfIndex)
		addresses = append(addresses, types.FromVppAddressWithPrefix(request.Prefix).String())
	}
	require.ElementsMatch(t, []string{"192.0.2.10/24", "2001:db8::10/64"}, addresses, "global addresses only, not fe80::")

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

	neighbors := sent[*ip_neighbor.IPNeighborAddDel](vpp)
	require.Len(t, neighbors, 1)
	require.Equal(t, "192.0.2.1", types.FromVppAddress(neighbors[0].Neighbor.IPAddress).String())
	require.Equal(t, "02:fc:00:00:00:99", neighbors[0].Neighbor.MacAddress.String())
	require.Equal(t, ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, neighbors[0].Neighbor.Flags)

	acls := sent[*acl.ACLAddReplace](vpp)
	require.Len(t, acls, 2)
	aclLists := sent[*acl.ACLInterfaceSetACLList](vpp)
	require.Len(t, aclLists, 1)
	require.Equal(t, uplinkSwIfIndex, aclLists[0].SwIfIndex)
	require.Equal(t, uint8(1), aclLists[0].NInput, "one ingress ACL, then one egress ACL")
	require.Equal(t, []uint32{1, 2}, aclLists[0].Acls)

	names := vpp.names()
	require.Equal(t, "af_packet_create_v3", names[0], "the interface exists before it is configured")
	require.Less(t, indexOf(names, "acl_interface_set_acl_list"), indexOf(names, "sw_interface_set_flags"), "deny-all is in place before the uplink comes up")
}

func TestUplinkByTunnelIPWithCustomParams(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")
	params := vppinit.DefaultParams()
	params.AfPacket.RxFrameSize = 2048
	params.AfPacket.NumRxQueues = 2

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, net.ParseIP("203.0.113.5"),
		vppinit.WithNetlinkHandle(handle), vppinit.WithParams(params))
	require.NoError(t, err)
	require.Equal(t, "203.0.113.5", tunnelIP.String())

	creates := sent[*af_packet.AfPacketCreateV3](vpp)
	require.Len(t, creates, 1)
	require.Equal(t, "fcmd-side0", creates[0].HostIfName, "the link holding the tunnel IP wins over the default-route link")
	require.Equal(t, uint32(2048), creates[0].RxFrameSize)
	require.Equal(t, uint16(2), creates[0].NumRxQueues)
}

func TestAfXdpCreatesAnXdpInterface(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfXdp, nil, vppinit.WithNetlinkHandle(handle))
	require.NoError(t, err)
	require.Empty(t, sent[*af_packet.AfPacketCreateV3](vpp))
	creates := sent[*af_xdp.AfXdpCreateV3](vpp)
	require.Len(t, creates, 1)
	require.Equal(t, "fcmd-up0", creates[0].HostIf)
	require.Equal(t, vppinit.DefaultParams().AfXdp.RxqSize, creates[0].RxqSize)
	require.NotEmpty(t, sent[*ip.IPRouteAddDel](vpp))
}

func TestNoneTouchesNothingButDerivesTheTunnelIP(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	tunnelIP, err := vppinit.Run(context.Background(), vpp.conn, vppinit.None, nil, vppinit.WithNetlinkHandle(handle))
	require.NoError(t, err)
	require.Equal(t, "192.0.2.10", tunnelIP.String())
	require.Empty(t, vpp.names())
}

func TestTunnelIPOnNoLinkIsAnError(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, net.ParseIP("192.0.2.77"), vppinit.WithNetlinkHandle(handle))
	require.ErrorContains(t, err, "no link holds the tunnel IP 192.0.2.77")
	require.Empty(t, vpp.names())
}

func TestNoDefaultRouteIsAnError(t *testing.T) {
	handle := newTestNetns(t)
	addVeth(t, handle, "fcmd-up0", "fcmd-upp0")
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
	require.ErrorContains(t, err, "no default route")
}

func TestVPPErrorNamesTheCall(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "af_packet_create_v3")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle))
	require.ErrorContains(t, err, "af_packet_create_v3 on fcmd-up0")
	require.Equal(t, []string{"af_packet_create_v3"}, vpp.names(), "nothing is configured on an interface that was not created")
}

func indexOf(names []string, name string) int {
	for i, candidate := range names {
		if candidate == name {
			return i
		}
	}
	return -1
}
