package vppsim_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// TestAfPacketXconnect: a host interface in the simulator's namespace, taken over with
// af_packet and cross-connected to a tap, carries a ping from the far end of its veth.
func TestAfPacketXconnect(t *testing.T) {
	node := vppsimtest.NewNetns(t, nsPrefix)
	peer := vppsimtest.NewNetns(t, nsPrefix)
	client := vppsimtest.NewNetns(t, nsPrefix)
	vppsimtest.Veth(t, node, "eth-up", "", peer, "eth-peer", "10.80.0.1/24")

	sim := startSim(t, node.Name)
	conn := connect(t, sim)
	ctx := ctxFor(t)

	reply, err := af_packet.NewServiceClient(conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "eth-up", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	up := reply.SwIfIndex
	setUp(ctx, t, conn, up)
	created := sim.State().Interfaces[uint32(up)]
	require.Equal(t, "host-eth-up", created.Name)
	require.Equal(t, uint32(9000), created.MTU[0], "VPP's default MTU, whatever the host interface's (TestNewInterfacesAsVPPReportsThem)")

	_, err = af_packet.NewServiceClient(conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{HostIfName: "no-such-if"})
	requireAPIError(t, err, api.INVALID_INTERFACE)

	tap := createTap(ctx, t, conn, client, "nsm-c")
	client.AddrAdd(t, "nsm-c", "10.80.0.2/24")
	xconnect(ctx, t, conn, up, tap, true)
	xconnect(ctx, t, conn, tap, up, true)
	require.NoError(t, vppsimtest.Ping(peer, mustAddr(t, "10.80.0.1"), mustAddr(t, "10.80.0.2"), 5*time.Second))

	dump, err := af_packet.NewServiceClient(conn).AfPacketDump(ctx, &af_packet.AfPacketDump{})
	require.NoError(t, err)
	d, err := dump.Recv()
	require.NoError(t, err)
	require.Equal(t, "eth-up", d.HostIfName)
	_, err = dump.Recv()
	require.ErrorIs(t, err, io.EOF)

	_, err = af_packet.NewServiceClient(conn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "eth-up"})
	require.NoError(t, err)
	require.Error(t, vppsimtest.Ping(peer, mustAddr(t, "10.80.0.1"), mustAddr(t, "10.80.0.2"), 700*time.Millisecond))
}

func createTun(ctx context.Context, t *testing.T, conn api.Connection, ns *vppsimtest.Netns, name string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1, HostIfNameSet: true, HostIfName: name,
		HostNamespaceSet: true, HostNamespace: ns.Name, TapFlags: tapv2.TAP_API_FLAG_TUN,
	})
	require.NoError(t, err)
	setUp(ctx, t, conn, reply.SwIfIndex)
	return reply.SwIfIndex
}

func l3xcTo(ctx context.Context, t *testing.T, conn api.Connection, from, to interface_types.InterfaceIndex) {
	t.Helper()
	_, err := l3xc.NewServiceClient(conn).L3xcUpdate(ctx, &l3xc.L3xcUpdate{L3xc: l3xc.L3xc{
		SwIfIndex: from,
		Paths:     []fib_types.FibPath{{SwIfIndex: uint32(to), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}},
	}})
	require.NoError(t, err)
}

// TestL3xcBetweenTuns: IP payload connections use tuns and l3xc, as sdk-vpp does.
func TestL3xcBetweenTuns(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	left := vppsimtest.NewNetns(t, nsPrefix)
	right := vppsimtest.NewNetns(t, nsPrefix)
	tunL := createTun(ctx, t, conn, left, "nsm-l")
	tunR := createTun(ctx, t, conn, right, "nsm-r")
	left.AddrAdd(t, "nsm-l", "10.90.0.1/24")
	right.AddrAdd(t, "nsm-r", "10.90.0.2/24")
	src, dst := mustAddr(t, "10.90.0.1"), mustAddr(t, "10.90.0.2")

	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond))
	l3xcTo(ctx, t, conn, tunL, tunR)
	l3xcTo(ctx, t, conn, tunR, tunL)
	require.NoError(t, vppsimtest.Ping(left, src, dst, 5*time.Second))

	_, err := l3xc.NewServiceClient(conn).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: tunR})
	require.NoError(t, err)
	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond))
	_, err = l3xc.NewServiceClient(conn).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: tunR})
	requireAPIError(t, err, api.INVALID_VALUE)
}
