package vppinit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

func TestVlanDevicesGetAnAfPacketInterfaceAndPromiscuousMode(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)
		addVeth(t, handle, "fcs-vl0", "fcs-vlp0")

		_, err := vppinit.Run(context.Background(), vpp, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle),
			vppinit.WithVlanDevices("fcs-vl0", "fcs-up0", "fcs-vl0"))
		require.NoError(t, err)

		var hosts []string
		for _, create := range sent[*af_packet.AfPacketCreateV3](vpp) {
			hosts = append(hosts, create.HostIfName)
		}
		require.Equal(t, []string{"fcs-up0", "fcs-vl0"}, hosts, "the uplink once, each vlan device once")
		require.Len(t, sent[*interfaces.SwInterfaceSetFlags](vpp), 2, "both come up")
		require.Equal(t, []string{"local0", "host-fcs-up0", "host-fcs-vl0"}, vpp.InterfaceNames(t))
		vlanDevice := vpp.InterfaceNamed(t, "host-fcs-vl0")
		require.True(t, vlanDevice.AdminUp)
		require.Equal(t, [4]uint32{1450, 1450, 1450, 1450}, vlanDevice.MTU)
		require.Empty(t, vpp.Addresses(t, vlanDevice.SwIfIndex), "a vlan device carries no address of the node")

		link, err := handle.LinkByName("fcs-vl0")
		require.NoError(t, err)
		require.Equal(t, 1, link.Attrs().Promisc, "vlan sub-interfaces receive frames for other MACs")
		uplink, err := handle.LinkByName("fcs-up0")
		require.NoError(t, err)
		require.Zero(t, uplink.Attrs().Promisc, "the uplink is not a vlan device")
	})
}

// A device VPP owns with no kernel link (a DPDK NIC; here a loopback) is looked up in VPP and
// asked for promiscuous mode. VPP refuses it for a loopback (UNSPECIFIED), which must come back
// naming the device.
func TestVlanDeviceOwnedByVPPGetsPromiscuousModeInVPP(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		loopback, err := interfaces.NewServiceClient(vpp).CreateLoopback(ctx, &interfaces.CreateLoopback{})
		require.NoError(t, err)
		vppOwnDevice := vpp.Interfaces(t)[loopback.SwIfIndex].Name

		_, err = vppinit.Run(ctx, vpp, vppinit.None, nil, vppinit.WithNetlinkHandle(handle),
			vppinit.WithVlanDevices(vppOwnDevice))
		require.ErrorIs(t, err, api.UNSPECIFIED)
		require.ErrorContains(t, err, "vlan device "+vppOwnDevice)

		require.Empty(t, sent[*af_packet.AfPacketCreateV3](vpp))
		promisc := sent[*interfaces.SwInterfaceSetPromisc](vpp)
		require.Len(t, promisc, 1)
		require.Equal(t, loopback.SwIfIndex, promisc[0].SwIfIndex)
		require.True(t, promisc[0].PromiscOn)
	})
}

func TestVlanDeviceNowhereIsAnError(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)

		_, err := vppinit.Run(context.Background(), vpp, vppinit.None, nil, vppinit.WithNetlinkHandle(handle),
			vppinit.WithVlanDevices("fcs-nosuch0"))
		require.ErrorContains(t, err, "vlan device fcs-nosuch0 is neither a kernel link nor a VPP interface")
	})
}

// A forwarder started again beside a VPP that kept running finds the vlan device's af_packet
// interface there from its previous run: it takes it up again (MTU, admin up, promiscuous) instead
// of failing on VPP's "interface already exists", which would stop every restart.
func TestVlanDeviceAlreadyInVPPIsTakenUpAgain(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		handle, vpp := node(t, backend)
		addVeth(t, handle, "fcs-vl0", "fcs-vlp0")
		ctx := context.Background()
		_, err := vppinit.Run(ctx, vpp, vppinit.None, nil, vppinit.WithNetlinkHandle(handle), vppinit.WithVlanDevices("fcs-vl0"))
		require.NoError(t, err)
		before := vpp.InterfaceNames(t)
		first := vpp.InterfaceNamed(t, "host-fcs-vl0")
		_, err = interfaces.NewServiceClient(vpp).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: interface_types.InterfaceIndex(first.SwIfIndex)})
		require.NoError(t, err)
		link, err := handle.LinkByName("fcs-vl0")
		require.NoError(t, err)
		require.NoError(t, handle.SetPromiscOff(link))

		_, err = vppinit.Run(ctx, vpp, vppinit.None, nil, vppinit.WithNetlinkHandle(handle), vppinit.WithVlanDevices("fcs-vl0"))
		require.NoError(t, err, "a restart beside the same VPP")

		require.Len(t, sent[*af_packet.AfPacketCreateV3](vpp), 1, "the af_packet interface is created once")
		require.Equal(t, before, vpp.InterfaceNames(t))
		again := vpp.InterfaceNamed(t, "host-fcs-vl0")
		require.Equal(t, first.SwIfIndex, again.SwIfIndex)
		require.True(t, again.AdminUp, "taken up again")
		link, err = handle.LinkByName("fcs-vl0")
		require.NoError(t, err)
		require.Equal(t, 1, link.Attrs().Promisc)
	})
}
