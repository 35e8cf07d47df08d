package vppsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func createBridge(ctx context.Context, t *testing.T, conn api.Connection) uint32 {
	t.Helper()
	reply, err := l2.NewServiceClient(conn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{
		IsAdd: true, BdID: ^uint32(0), Flood: true, UuFlood: true, Forward: true, Learn: true,
	})
	require.NoError(t, err)
	return reply.BdID
}

func joinBridge(ctx context.Context, t *testing.T, conn api.Connection, idx interface_types.InterfaceIndex, bd uint32, shg uint8, enable bool) {
	t.Helper()
	_, err := l2.NewServiceClient(conn).SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: idx, BdID: bd, Shg: shg, Enable: enable})
	require.NoError(t, err)
}

// TestBridgeDomain: three taps in one bridge domain reach each other (flooding, then
// learning); members of one split-horizon group do not; a member that leaves is cut off.
func TestBridgeDomain(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	a, b, c := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	tapA, tapB, tapC := createTap(ctx, t, conn, a, "nsm-a"), createTap(ctx, t, conn, b, "nsm-b"), createTap(ctx, t, conn, c, "nsm-c")
	a.AddrAdd(t, "nsm-a", "10.62.0.1/24")
	b.AddrAdd(t, "nsm-b", "10.62.0.2/24")
	c.AddrAdd(t, "nsm-c", "10.62.0.3/24")
	ipA, ipB, ipC := mustAddr(t, "10.62.0.1"), mustAddr(t, "10.62.0.2"), mustAddr(t, "10.62.0.3")

	bd := createBridge(ctx, t, conn)
	joinBridge(ctx, t, conn, tapA, bd, 0, true)
	joinBridge(ctx, t, conn, tapB, bd, 1, true)
	joinBridge(ctx, t, conn, tapC, bd, 1, true)
	require.NoError(t, vppsimtest.Ping(a, ipA, ipB, 5*time.Second))
	require.NoError(t, vppsimtest.Ping(a, ipA, ipC, 5*time.Second))
	require.Error(t, vppsimtest.Ping(b, ipB, ipC, 700*time.Millisecond), "one split-horizon group must not talk to itself")

	joinBridge(ctx, t, conn, tapB, bd, 0, false)
	require.Error(t, vppsimtest.Ping(a, ipA, ipB, 700*time.Millisecond), "a member that left the bridge is cut off")
	require.NoError(t, vppsimtest.Ping(a, ipA, ipC, 5*time.Second))
}

// vlanNode is one simulator whose af_packet uplink has a VLAN sub-interface
// cross-connected to a tap in a client namespace, the way sdk-vpp's vlan mechanism
// uses it.
func vlanNode(ctx context.Context, t *testing.T, node *vppsimtest.Netns, vlan uint32, clientCIDR string) (api.Connection, interface_types.InterfaceIndex, *vppsimtest.Netns) {
	t.Helper()
	conn := connect(t, startSim(t, node.Name))
	created, err := af_packet.NewServiceClient(conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "eth0", NumRxQueues: 1, NumTxQueues: 1})
	require.NoError(t, err)
	setUp(ctx, t, conn, created.SwIfIndex)
	sub, err := interfaces.NewServiceClient(conn).CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: created.SwIfIndex, VlanID: vlan})
	require.NoError(t, err)
	_, err = l2.NewServiceClient(conn).L2InterfaceVlanTagRewrite(ctx, &l2.L2InterfaceVlanTagRewrite{SwIfIndex: sub.SwIfIndex, VtrOp: 3, PushDot1q: 1})
	require.NoError(t, err)
	setUp(ctx, t, conn, sub.SwIfIndex)
	client := vppsimtest.NewNetns(t, nsPrefix)
	tap := createTap(ctx, t, conn, client, "nsm-v")
	client.AddrAdd(t, "nsm-v", clientCIDR)
	xconnect(ctx, t, conn, sub.SwIfIndex, tap, true)
	xconnect(ctx, t, conn, tap, sub.SwIfIndex, true)
	return conn, created.SwIfIndex, client
}

// TestVlanSubInterfaces: two nodes joined by a veth, each with a VLAN sub-interface on its
// af_packet uplink; traffic crosses tagged while the VLANs agree and stops when they do
// not. (The kernel here has no 8021q, so the far end is a second simulator.)
func TestVlanSubInterfaces(t *testing.T) {
	ctx := ctxFor(t)
	nodeA, nodeB := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, nodeA, "eth0", "", nodeB, "eth0", "")
	connA, _, clientA := vlanNode(ctx, t, nodeA, 100, "10.63.0.1/24")
	connB, uplinkB, _ := vlanNode(ctx, t, nodeB, 100, "10.63.0.2/24")
	src, dst := mustAddr(t, "10.63.0.1"), mustAddr(t, "10.63.0.2")
	require.NoError(t, vppsimtest.Ping(clientA, src, dst, 5*time.Second))

	// Move node B's sub-interface to VLAN 200: the tagged frames from A find no taker.
	subB := findSub(t, connB, uplinkB)
	_, err := interfaces.NewServiceClient(connB).DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: subB})
	require.NoError(t, err)
	sub200, err := interfaces.NewServiceClient(connB).CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: uplinkB, VlanID: 200})
	require.NoError(t, err)
	setUp(ctx, t, connB, sub200.SwIfIndex)
	tapB := findTap(t, connB)
	xconnect(ctx, t, connB, sub200.SwIfIndex, tapB, true)
	xconnect(ctx, t, connB, tapB, sub200.SwIfIndex, true)
	require.Error(t, vppsimtest.Ping(clientA, src, dst, 700*time.Millisecond), "mismatched VLANs must not carry traffic")

	// Deleting the parent takes its sub-interfaces with it.
	_, err = af_packet.NewServiceClient(connA).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "eth0"})
	require.NoError(t, err)
	details := recvAll(t, must(interfaces.NewServiceClient(connA).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: "host-eth0"})).Recv)
	require.Empty(t, details)
}

func findSub(t *testing.T, conn api.Connection, parent interface_types.InterfaceIndex) interface_types.InterfaceIndex {
	t.Helper()
	for _, d := range recvAll(t, must(interfaces.NewServiceClient(conn).SwInterfaceDump(context.Background(), &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})).Recv) {
		if d.Type == interface_types.IF_API_TYPE_SUB && d.SupSwIfIndex == uint32(parent) {
			return d.SwIfIndex
		}
	}
	t.Fatal("no sub-interface")
	return 0
}

func findTap(t *testing.T, conn api.Connection) interface_types.InterfaceIndex {
	t.Helper()
	for _, d := range recvAll(t, must(interfaces.NewServiceClient(conn).SwInterfaceDump(context.Background(), &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: "tap"})).Recv) {
		return d.SwIfIndex
	}
	t.Fatal("no tap")
	return 0
}

// TestBridgeDomainDump: bridge_domain_dump lists every domain with its members, one domain by its
// ID, or the domain of a member interface (none for an interface in no domain), as VPP does; a
// deleted member leaves its domain's list.
func TestBridgeDomainDump(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	a, b := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	tapA, tapB := createTap(ctx, t, conn, a, "nsm-a"), createTap(ctx, t, conn, b, "nsm-b")
	first, second := createBridge(ctx, t, conn), createBridge(ctx, t, conn)
	joinBridge(ctx, t, conn, tapA, first, 0, true)
	joinBridge(ctx, t, conn, tapB, first, 1, true)

	dump := func(bd uint32, member interface_types.InterfaceIndex) map[uint32][]l2.BridgeDomainSwIf {
		t.Helper()
		stream, err := l2.NewServiceClient(conn).BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: bd, SwIfIndex: member})
		require.NoError(t, err)
		out := map[uint32][]l2.BridgeDomainSwIf{}
		for _, details := range recvAll(t, stream.Recv) {
			require.Equal(t, int(details.NSwIfs), len(details.SwIfDetails))
			out[details.BdID] = details.SwIfDetails
		}
		return out
	}
	any := ^interface_types.InterfaceIndex(0)
	members := []l2.BridgeDomainSwIf{{SwIfIndex: tapA}, {SwIfIndex: tapB, Shg: 1}}
	require.Equal(t, map[uint32][]l2.BridgeDomainSwIf{first: members, second: {}}, dump(^uint32(0), any))
	require.Equal(t, map[uint32][]l2.BridgeDomainSwIf{second: {}}, dump(second, any))
	require.Equal(t, map[uint32][]l2.BridgeDomainSwIf{first: members}, dump(^uint32(0), tapB))
	require.Empty(t, dump(0, any), "bridge domain 0 is VPP's default, never listed")

	_, err := tapv2.NewServiceClient(conn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: tapB})
	require.NoError(t, err)
	require.Equal(t, map[uint32][]l2.BridgeDomainSwIf{first: members[:1]}, dump(first, any))
	joinBridge(ctx, t, conn, tapA, first, 0, false)
	require.Empty(t, dump(^uint32(0), tapA), "an interface in no bridge domain")
}
