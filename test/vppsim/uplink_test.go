package vppsim_test

import (
	"testing"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/acl_types"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// recvAll drains a dump stream.
func recvAll[T any](t *testing.T, recv func() (T, error)) []T {
	t.Helper()
	var out []T
	require.NoError(t, vppdump.Drain(recv, "the dump", func(d T) { out = append(out, d) }))
	return out
}

// TestUplinkInitSequence plays what an uplink init sends (af_packet, MTU, address,
// route, neighbour, ACL) and checks that the dumps return it and that deletes of missing
// objects fail the way VPP fails them.
func TestUplinkInitSequence(t *testing.T) {
	node := vppsimtest.NewNetns(t, nsPrefix)
	peer := vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, node, "eth0", "", peer, "eth0", "")
	sim := startSim(t, node.Path())
	conn := connect(t, sim)
	ctx := ctxFor(t)
	ifc := interfaces.NewServiceClient(conn)
	ipc := ip.NewServiceClient(conn)

	// The classic uplink init uses the first af_packet_create with the host's MAC.
	hostMAC, err := ethernet_types.ParseMacAddress("02:00:00:00:00:aa")
	require.NoError(t, err)
	created, err := af_packet.NewServiceClient(conn).AfPacketCreate(ctx, &af_packet.AfPacketCreate{HostIfName: "eth0", HwAddr: hostMAC})
	require.NoError(t, err)
	up := created.SwIfIndex
	require.Equal(t, "02:00:00:00:00:aa", sim.State().Interfaces[uint32(up)].MAC)
	_, err = af_packet.NewServiceClient(conn).AfPacketSetL4CksumOffload(ctx, &af_packet.AfPacketSetL4CksumOffload{SwIfIndex: up, Set: true})
	require.NoError(t, err)
	_, err = ifc.SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: up, Mtu: []uint32{1450, 0, 0, 0}})
	require.NoError(t, err)
	_, err = ifc.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: up, IsAdd: true, Prefix: mustPrefix(t, "192.168.50.2/24")})
	require.NoError(t, err)
	_, err = ifc.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: up, Tag: "uplink"})
	require.NoError(t, err)
	setUp(ctx, t, conn, up)

	gw := mustAddress(t, "192.168.50.1")
	route := ip.IPRoute{
		Prefix: ip_types.Prefix{Address: mustAddress(t, "0.0.0.0"), Len: 0},
		Paths: []fib_types.FibPath{{SwIfIndex: uint32(up), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
			Nh: fib_types.FibPathNh{Address: gw.Un}}},
	}
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: route})
	require.NoError(t, err)
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{TableID: 77, Prefix: route.Prefix}})
	requireAPIError(t, err, api.NO_SUCH_FIB)

	mac, err := ethernet_types.ParseMacAddress("02:00:00:00:00:01")
	require.NoError(t, err)
	neighbor := ip_neighbor.IPNeighbor{SwIfIndex: up, MacAddress: mac, IPAddress: gw, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC}
	_, err = ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: neighbor})
	require.NoError(t, err)

	details := recvAll(t, must(ifc.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: up})).Recv)
	require.Len(t, details, 1)
	require.Equal(t, "host-eth0", details[0].InterfaceName)
	require.Equal(t, "uplink", details[0].Tag)
	require.Equal(t, uint32(1450), details[0].Mtu[0])
	require.Equal(t, interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP, details[0].Flags)

	byName := recvAll(t, must(ifc.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: "HOST-"})).Recv)
	require.Len(t, byName, 1, "the name filter is a case-insensitive substring match")

	addrs := recvAll(t, must(ipc.IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: up})).Recv)
	require.Len(t, addrs, 1)
	require.Equal(t, "192.168.50.2/24", addrs[0].Prefix.String())

	routes := recvAll(t, must(ipc.IPRouteDump(ctx, &ip.IPRouteDump{Table: ip.IPTable{TableID: 0}})).Recv)
	require.Len(t, routes, 1)
	require.Equal(t, "0.0.0.0/0", routes[0].Route.Prefix.String())
	require.Equal(t, uint32(up), routes[0].Route.Paths[0].SwIfIndex)

	neighbors := recvAll(t, must(ip_neighbor.NewServiceClient(conn).IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{
		SwIfIndex: ^interface_types.InterfaceIndex(0), Af: ip_types.ADDRESS_IP4,
	})).Recv)
	require.Len(t, neighbors, 1)
	require.Equal(t, "02:00:00:00:00:01", neighbors[0].Neighbor.MacAddress.String())

	// ACLs: create, bind, refuse to delete while bound, dump.
	aclc := acl.NewServiceClient(conn)
	added, err := aclc.ACLAddReplace(ctx, &acl.ACLAddReplace{ACLIndex: ^uint32(0), Tag: "nsm", R: []acl_types.ACLRule{{IsPermit: acl_types.ACL_ACTION_API_PERMIT}}})
	require.NoError(t, err)
	_, err = aclc.ACLInterfaceSetACLList(ctx, &acl.ACLInterfaceSetACLList{SwIfIndex: up, NInput: 1, Acls: []uint32{added.ACLIndex}})
	require.NoError(t, err)
	_, err = aclc.ACLDel(ctx, &acl.ACLDel{ACLIndex: added.ACLIndex})
	requireAPIError(t, err, api.ACL_IN_USE_INBOUND)
	acls := recvAll(t, must(aclc.ACLDump(ctx, &acl.ACLDump{ACLIndex: ^uint32(0)})).Recv)
	require.Len(t, acls, 1)
	require.Equal(t, "nsm", acls[0].Tag)
	lists := recvAll(t, must(aclc.ACLInterfaceListDump(ctx, &acl.ACLInterfaceListDump{SwIfIndex: up})).Recv)
	require.Equal(t, []uint32{added.ACLIndex}, lists[0].Acls)

	// Deletes of what is not there.
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: false, Route: ip.IPRoute{Prefix: mustIPPrefix(t, "10.9.9.0/24")}})
	require.NoError(t, err, "VPP does not mind removing a route that is not there (TestRetvalsAsVPP)")
	_, err = ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: false, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: up, IPAddress: mustAddress(t, "192.168.50.9")}})
	requireAPIError(t, err, api.NO_SUCH_ENTRY)
	_, err = aclc.ACLDel(ctx, &acl.ACLDel{ACLIndex: 99})
	requireAPIError(t, err, api.NO_SUCH_ENTRY)

	// And deletes of what is there.
	_, err = ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: false, Route: route})
	require.NoError(t, err)
	_, err = ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: false, Neighbor: neighbor})
	require.NoError(t, err)
	st := sim.State()
	require.Empty(t, st.Routes)
	require.Empty(t, st.Neighbors)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustIPPrefix(t *testing.T, s string) ip_types.Prefix {
	t.Helper()
	p, err := ip_types.ParsePrefix(s)
	require.NoError(t, err)
	return p
}
