package vppsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kerneltap"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics/stats"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func kernelRequest(id string, ns *vppsimtest.Netns, ifName string) *networkservice.NetworkServiceRequest {
	mech := kernel.New("file://" + ns.Path())
	kernel.ToMechanism(mech).SetInterfaceName(ifName)
	return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id:        id,
		Payload:   payload.Ethernet,
		Mechanism: mech,
		Path:      &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Id: id, Name: "forwarder"}}},
	}}
}

func tapByHostName(s *state.State, name string) (*state.Interface, bool) {
	for _, i := range s.Interfaces {
		if i.Tap != nil && i.Tap.HostIfName == name {
			return i, true
		}
	}
	return nil, false
}

// TestSdkVppKerneltapAgainstSimulator drives sdk-vpp's own kerneltap, up and stats
// elements (the code the forwarder runs) against the simulator, then carries a ping
// between the two interfaces they made.
func TestSdkVppKerneltapAgainstSimulator(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	// No deadline: kerneltap logs a stack trace for every request that has one.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := chain.NewNetworkServiceServer(
		metadata.NewServer(),
		stats.NewServer(ctx, stats.WithSocket(sim.StatsSocket())),
		up.NewServer(ctx, conn),
		kerneltap.NewServer(conn),
	)
	nsA := vppsimtest.NewNetns(t, nsPrefix)
	nsB := vppsimtest.NewNetns(t, nsPrefix)

	connA, err := server.Request(ctx, kernelRequest("conn-a", nsA, "nsm-a"))
	require.NoError(t, err)
	connB, err := server.Request(ctx, kernelRequest("conn-b", nsB, "nsm-b"))
	require.NoError(t, err)

	var alias string
	nsA.MustDo(t, func() error {
		link, err := netlink.LinkByName("nsm-a")
		if err == nil {
			alias = link.Attrs().Alias
		}
		return err
	})
	require.Equal(t, "server-conn-a", alias, "kerneltap sets the alias on the host side the simulator created")

	st := sim.State()
	tapA, ok := tapByHostName(st, "nsm-a")
	require.True(t, ok)
	tapB, ok := tapByHostName(st, "nsm-b")
	require.True(t, ok)
	require.True(t, tapA.AdminUp && tapA.LinkUp, "up must have enabled the VPP side")
	require.Equal(t, uint32(interface_types.RX_MODE_API_ADAPTIVE), tapA.RxMode)

	nsA.AddrAdd(t, "nsm-a", "10.50.0.1/24")
	nsB.AddrAdd(t, "nsm-b", "10.50.0.2/24")
	a, b := interface_types.InterfaceIndex(tapA.SwIfIndex), interface_types.InterfaceIndex(tapB.SwIfIndex)
	xconnect(ctx, t, conn, a, b, true)
	xconnect(ctx, t, conn, b, a, true)
	require.NoError(t, vppsimtest.Ping(nsA, mustAddr(t, "10.50.0.1"), mustAddr(t, "10.50.0.2"), 5*time.Second))

	// The metrics element reads the simulator's stats segment on re-Request.
	connA, err = server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: connA})
	require.NoError(t, err)
	require.NotEmpty(t, connA.GetPath().GetPathSegments()[0].GetMetrics()["server_rx_packets"], "sdk-vpp's stats element must find counters")

	_, err = server.Close(ctx, connA)
	require.NoError(t, err)
	_, err = server.Close(ctx, connB)
	require.NoError(t, err)
	nsA.MustDo(t, func() error {
		_, err := netlink.LinkByName("nsm-a")
		require.Error(t, err, "Close must remove the tap")
		return nil
	})
	_, ok = tapByHostName(sim.State(), "nsm-a")
	require.False(t, ok)
}
