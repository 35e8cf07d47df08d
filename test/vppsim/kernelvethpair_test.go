package vppsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kernelvethpair"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func afPacketInterfaces(s *state.State) []*state.Interface {
	var out []*state.Interface
	for _, i := range s.SortedInterfaces() {
		if i.AfPacket != nil {
			out = append(out, i)
		}
	}
	return out
}

// TestSdkVppKernelVethPairAgainstSimulator drives sdk-vpp's kernelvethpair, which the
// stock kernel mechanism picks when /dev/vhost-net is missing (as on these machines): a
// veth pair per connection with VPP's af_packet on the forwarder's end. Forwarder and
// simulator share a namespace, as VPP and the forwarder share a pod.
func TestSdkVppKernelVethPairAgainstSimulator(t *testing.T) {
	forwarderNs := vppsimtest.NewNetns(t, nsPrefix)
	sim := startSim(t, forwarderNs.Name)
	conn := connect(t, sim)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := chain.NewNetworkServiceServer(
		metadata.NewServer(),
		up.NewServer(ctx, conn),
		kernelvethpair.NewServer(conn),
	)
	nsA := vppsimtest.NewNetns(t, nsPrefix)
	nsB := vppsimtest.NewNetns(t, nsPrefix)

	var connA, connB *networkservice.Connection
	forwarderNs.MustDo(t, func() error {
		var err error
		if connA, err = server.Request(ctx, kernelRequest("conn-a", nsA, "nsm-a")); err != nil {
			return err
		}
		connB, err = server.Request(ctx, kernelRequest("conn-b", nsB, "nsm-b"))
		return err
	})
	nsA.MustDo(t, func() error { _, err := netlink.LinkByName("nsm-a"); return err })

	ports := afPacketInterfaces(sim.State())
	require.Len(t, ports, 2)
	for _, p := range ports {
		require.True(t, p.AdminUp && p.LinkUp, "up must have enabled %s", p.Name)
	}
	a, b := interface_types.InterfaceIndex(ports[0].SwIfIndex), interface_types.InterfaceIndex(ports[1].SwIfIndex)
	nsA.AddrAdd(t, "nsm-a", "10.52.0.1/24")
	nsB.AddrAdd(t, "nsm-b", "10.52.0.2/24")
	xconnect(ctx, t, conn, a, b, true)
	xconnect(ctx, t, conn, b, a, true)
	require.NoError(t, vppsimtest.Ping(nsA, mustAddr(t, "10.52.0.1"), mustAddr(t, "10.52.0.2"), 5*time.Second))

	forwarderNs.MustDo(t, func() error {
		if _, err := server.Close(ctx, connA); err != nil {
			return err
		}
		_, err := server.Close(ctx, connB)
		return err
	})
	require.Empty(t, afPacketInterfaces(sim.State()), "Close must delete the af_packet interfaces")
}
