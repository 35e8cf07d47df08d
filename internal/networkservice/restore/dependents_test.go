package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// A veth connection's VPP side as a dead run leaves it: two af_packet interfaces tagged with the
// connection, each with a static neighbour for the peer's address and an l3xc to the other.
// Releasing them must take the neighbours and cross-connects too: on VPP v24.10 a static
// neighbour left on a deleted interface crashes VPP at the next deletion of a neighbour with the
// same IP, which is what closing the same connection rebuilt does.
func TestReleasedInterfacesTakeTheirNeighboursAndCrossConnects(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		node := vppsimtest.NewNetns(t, "rst")
		for _, name := range []string{"a", "b", "c"} {
			vppsimtest.Veth(t, node, name+"0", "", node, name+"1", "")
		}
		vpp := vpptest.Start(t, backend, node)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a, b, other := afPacketOn(ctx, t, vpp, "a0"), afPacketOn(ctx, t, vpp, "b0"), afPacketOn(ctx, t, vpp, "c0")
		for _, index := range []interface_types.InterfaceIndex{a, b} {
			_, err := interfaces.NewServiceClient(vpp).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index, Tag: "conn-a"})
			require.NoError(t, err)
		}
		staticNeighbor(ctx, t, vpp, true, a, "172.16.0.2")
		staticNeighbor(ctx, t, vpp, true, b, "172.16.0.1")
		staticNeighbor(ctx, t, vpp, true, other, "172.16.0.2")
		crossConnect(ctx, t, vpp, a, b, "172.16.0.1")
		crossConnect(ctx, t, vpp, b, a, "172.16.0.2")

		view, err := readVPP(ctx, vpp)
		require.NoError(t, err)
		require.NoError(t, NewReleaser(vpp, nil).releaseInterfaces(ctx, view.tagged(map[string]bool{"conn-a": true})))

		require.Equal(t, []string{"local0", "host-c0"}, vpp.InterfaceNames(t))
		require.Equal(t, []vpptest.Neighbor{{SwIfIndex: uint32(other), IP: "172.16.0.2", MAC: "02:00:00:00:00:01", Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC}},
			vpp.Neighbors(t, ^uint32(0)), "only the untagged interface's neighbour is left")
		stream, err := l3xc.NewServiceClient(vpp.Conn.Connection).L3xcDump(ctx, &l3xc.L3xcDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		require.NoError(t, err)
		_, err = stream.Recv()
		require.Error(t, err, "an l3xc outlived its interface")

		staticNeighbor(ctx, t, vpp, false, other, "172.16.0.2")
		_, err = vpe.NewServiceClient(vpp).ShowVersion(ctx, &vpe.ShowVersion{})
		require.NoError(t, err, "VPP must survive deleting a neighbour whose IP a released interface had")
	})
}

func afPacketOn(ctx context.Context, t *testing.T, vpp *vpptest.VPP, host string) interface_types.InterfaceIndex {
	t.Helper()
	created, err := af_packet.NewServiceClient(vpp).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: host, UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	return created.SwIfIndex
}

func staticNeighbor(ctx context.Context, t *testing.T, vpp *vpptest.VPP, isAdd bool, index interface_types.InterfaceIndex, ip string) {
	t.Helper()
	address, err := ip_types.ParseAddress(ip)
	require.NoError(t, err)
	mac, err := ethernet_types.ParseMacAddress("02:00:00:00:00:01")
	require.NoError(t, err)
	_, err = ip_neighbor.NewServiceClient(vpp).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: isAdd, Neighbor: ip_neighbor.IPNeighbor{
		SwIfIndex: index, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: address,
	}})
	require.NoError(t, err)
}

func crossConnect(ctx context.Context, t *testing.T, vpp *vpptest.VPP, from, to interface_types.InterfaceIndex, nextHop string) {
	t.Helper()
	address, err := ip_types.ParseAddress(nextHop)
	require.NoError(t, err)
	_, err = l3xc.NewServiceClient(vpp).L3xcUpdate(ctx, &l3xc.L3xcUpdate{L3xc: l3xc.L3xc{SwIfIndex: from, NPaths: 1, Paths: []fib_types.FibPath{{
		SwIfIndex: uint32(to), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4, Nh: fib_types.FibPathNh{Address: address.Un},
	}}}})
	require.NoError(t, err)
}
