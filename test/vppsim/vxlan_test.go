package vppsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func createVxlan(ctx context.Context, t *testing.T, conn api.Connection, src, dst string, vni uint32) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := vxlan.NewServiceClient(conn).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
		IsAdd:          true,
		Instance:       ^uint32(0),
		SrcAddress:     mustAddress(t, src),
		DstAddress:     mustAddress(t, dst),
		DecapNextIndex: ^uint32(0),
		Vni:            vni,
	})
	require.NoError(t, err)
	setUp(ctx, t, conn, reply.SwIfIndex)
	return reply.SwIfIndex
}

func mustAddress(t *testing.T, s string) ip_types.Address {
	t.Helper()
	a, err := ip_types.ParseAddress(s)
	require.NoError(t, err)
	return a
}

// TestVxlanBetweenTwoSimulators: two nodes, each a namespace with its own simulator,
// joined by a veth "underlay"; each node has a client namespace with a tap, the tap is
// cross-connected to a VXLAN tunnel to the other node, and a ping crosses both.
func TestVxlanBetweenTwoSimulators(t *testing.T) {
	nodeA := vppsimtest.NewNetns(t, nsPrefix)
	nodeB := vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, nodeA, "uplink", "172.30.0.1/24", nodeB, "uplink", "172.30.0.2/24")
	clientA := vppsimtest.NewNetns(t, nsPrefix)
	clientB := vppsimtest.NewNetns(t, nsPrefix)

	simA, simB := startSim(t, nodeA.Name), startSim(t, nodeB.Name)
	connA, connB := connect(t, simA), connect(t, simB)
	ctx := ctxFor(t)

	tapA := createTap(ctx, t, connA, clientA, "nsm-a")
	tapB := createTap(ctx, t, connB, clientB, "nsm-b")
	clientA.AddrAdd(t, "nsm-a", "10.70.0.1/24")
	clientB.AddrAdd(t, "nsm-b", "10.70.0.2/24")
	src, dst := mustAddr(t, "10.70.0.1"), mustAddr(t, "10.70.0.2")

	vxA := createVxlan(ctx, t, connA, "172.30.0.1", "172.30.0.2", 42)
	vxB := createVxlan(ctx, t, connB, "172.30.0.2", "172.30.0.1", 42)
	xconnect(ctx, t, connA, tapA, vxA, true)
	xconnect(ctx, t, connA, vxA, tapA, true)
	xconnect(ctx, t, connB, tapB, vxB, true)
	xconnect(ctx, t, connB, vxB, tapB, true)
	require.NoError(t, vppsimtest.Ping(clientA, src, dst, 5*time.Second))

	// A tunnel with the wrong VNI on one side must break the path.
	_, err := vxlan.NewServiceClient(connB).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
		IsAdd: false, SrcAddress: mustAddress(t, "172.30.0.2"), DstAddress: mustAddress(t, "172.30.0.1"), Vni: 42,
	})
	require.NoError(t, err)
	vxWrong := createVxlan(ctx, t, connB, "172.30.0.2", "172.30.0.1", 43)
	xconnect(ctx, t, connB, tapB, vxWrong, true)
	xconnect(ctx, t, connB, vxWrong, tapB, true)
	require.Error(t, vppsimtest.Ping(clientA, src, dst, 700*time.Millisecond), "mismatched VNIs must not carry traffic")

	// Deleting a tunnel that is not there is VPP's NO_SUCH_ENTRY.
	_, err = vxlan.NewServiceClient(connB).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
		IsAdd: false, SrcAddress: mustAddress(t, "172.30.0.2"), DstAddress: mustAddress(t, "172.30.0.1"), Vni: 42,
	})
	requireAPIError(t, err, api.NO_SUCH_ENTRY)

	dump, err := vxlan.NewServiceClient(connA).VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	d, err := dump.Recv()
	require.NoError(t, err)
	require.Equal(t, uint32(42), d.Vni)
	require.Equal(t, uint16(4789), d.DstPort)
}

// TestIPPayloadOverVxlan: IP payload connections join tuns to VXLAN tunnels with l3xc, as
// sdk-vpp's l3xconnect does; IP packets must cross in an Ethernet frame and come out bare.
func TestIPPayloadOverVxlan(t *testing.T) {
	nodeA := vppsimtest.NewNetns(t, nsPrefix)
	nodeB := vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, nodeA, "uplink", "172.31.0.1/24", nodeB, "uplink", "172.31.0.2/24")
	clientA := vppsimtest.NewNetns(t, nsPrefix)
	clientB := vppsimtest.NewNetns(t, nsPrefix)

	simA, simB := startSim(t, nodeA.Name), startSim(t, nodeB.Name)
	connA, connB := connect(t, simA), connect(t, simB)
	ctx := ctxFor(t)

	tunA := createTun(ctx, t, connA, clientA, "nsm-a")
	tunB := createTun(ctx, t, connB, clientB, "nsm-b")
	clientA.AddrAdd(t, "nsm-a", "10.71.0.1/24")
	clientB.AddrAdd(t, "nsm-b", "10.71.0.2/24")

	vxA := createVxlan(ctx, t, connA, "172.31.0.1", "172.31.0.2", 7)
	vxB := createVxlan(ctx, t, connB, "172.31.0.2", "172.31.0.1", 7)
	l3xcTo(ctx, t, connA, tunA, vxA)
	l3xcTo(ctx, t, connA, vxA, tunA)
	l3xcTo(ctx, t, connB, tunB, vxB)
	l3xcTo(ctx, t, connB, vxB, tunB)
	require.NoError(t, vppsimtest.Ping(clientA, mustAddr(t, "10.71.0.1"), mustAddr(t, "10.71.0.2"), 5*time.Second))
}
