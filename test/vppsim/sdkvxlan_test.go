package vppsim_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/vlib"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// uplinkInit gives the simulator the node's uplink with its address, as the forwarder's
// uplink init does; sdk-vpp's vxlan MTU lookup needs the tunnel IP on a VPP interface.
func uplinkInit(ctx context.Context, t *testing.T, conn api.Connection, host, cidr string) {
	t.Helper()
	created, err := af_packet.NewServiceClient(conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: host, NumRxQueues: 1, NumTxQueues: 1})
	require.NoError(t, err)
	_, err = interfaces.NewServiceClient(conn).SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: created.SwIfIndex, IsAdd: true, Prefix: mustPrefix(t, cidr),
	})
	require.NoError(t, err)
	setUp(ctx, t, conn, created.SwIfIndex)
}

func vxlanRequest(id string, peer net.IP, vni uint32) *networkservice.NetworkServiceRequest {
	mech := &networkservice.Mechanism{Cls: cls.REMOTE, Type: vxlanmech.MECHANISM, Parameters: map[string]string{}}
	vxlanmech.ToMechanism(mech).SetSrcIP(peer).SetVNI(vni)
	return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id:        id,
		Payload:   payload.Ethernet,
		Mechanism: mech,
		Path:      &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Id: id, Name: "forwarder"}}},
	}}
}

// TestSdkVppVxlanAgainstSimulators drives sdk-vpp's vxlan mechanism (vlib node arcs, the
// MTU lookup through nested dumps, tunnel creation, up) on two simulators, then joins each
// tunnel to a tap and pings across.
func TestSdkVppVxlanAgainstSimulators(t *testing.T) {
	nodeA, nodeB := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, nodeA, "uplink", "172.32.0.1/24", nodeB, "uplink", "172.32.0.2/24")
	simA, simB := startSim(t, nodeA.Name), startSim(t, nodeB.Name)
	connA, connB := connect(t, simA), connect(t, simB)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	uplinkInit(ctx, t, connA, "uplink", "172.32.0.1/24")
	uplinkInit(ctx, t, connB, "uplink", "172.32.0.2/24")
	ipA, ipB := net.ParseIP("172.32.0.1").To4(), net.ParseIP("172.32.0.2").To4()

	serve := func(conn api.Connection, tunnelIP, peer net.IP) {
		server := chain.NewNetworkServiceServer(metadata.NewServer(), up.NewServer(ctx, conn), vxlan.NewServer(conn, tunnelIP))
		c, err := server.Request(ctx, vxlanRequest("conn-vx", peer, 4242))
		require.NoError(t, err)
		// The MTU element found the uplink through nested dumps: its MTU (VPP's default for
		// af_packet: this uplink init sets none) less outer IPv4, UDP, VXLAN, inner Ethernet
		// and a VLAN tag (20+8+8+14+4).
		require.Equal(t, uint32(9000-54), c.GetContext().GetMTU())
	}
	serve(connA, ipA, ipB)
	serve(connB, ipB, ipA)
	require.Len(t, vppsim.RequestsOf[*vlib.AddNodeNext](simA), 1)

	tunnel := func(sim *vppsim.Sim) interface_types.InterfaceIndex {
		for _, i := range sim.State().SortedInterfaces() {
			if i.Vxlan != nil {
				require.True(t, i.AdminUp, "up enabled the tunnel")
				require.Equal(t, uint32(4242), i.Vxlan.Vni)
				return interface_types.InterfaceIndex(i.SwIfIndex)
			}
		}
		t.Fatal("no vxlan tunnel")
		return 0
	}
	vxA, vxB := tunnel(simA), tunnel(simB)
	clientA, clientB := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	tapA, tapB := createTap(ctx, t, connA, clientA, "nsm-a"), createTap(ctx, t, connB, clientB, "nsm-b")
	clientA.AddrAdd(t, "nsm-a", "10.72.0.1/24")
	clientB.AddrAdd(t, "nsm-b", "10.72.0.2/24")
	for _, x := range []struct {
		conn     api.Connection
		tap, tun interface_types.InterfaceIndex
	}{{connA, tapA, vxA}, {connB, tapB, vxB}} {
		xconnect(ctx, t, x.conn, x.tap, x.tun, true)
		xconnect(ctx, t, x.conn, x.tun, x.tap, true)
	}
	require.NoError(t, vppsimtest.Ping(clientA, mustAddr(t, "10.72.0.1"), mustAddr(t, "10.72.0.2"), 5*time.Second))
}
