package vppinit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"

	"github.com/nsmfwd/forwarder-vpp/internal/vppinit"
)

func TestVlanDevicesGetAnAfPacketInterfaceAndPromiscuousMode(t *testing.T) {
	handle := node(t)
	addVeth(t, handle, "fcmd-vl0", "fcmd-vlp0")
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.AfPacket, nil, vppinit.WithNetlinkHandle(handle),
		vppinit.WithVlanDevices("fcmd-vl0", "fcmd-up0", "fcmd-vl0"))
	require.NoError(t, err)

	var hosts []string
	for _, create := range sent[*af_packet.AfPacketCreateV3](vpp) {
		hosts = append(hosts, create.HostIfName)
	}
	require.Equal(t, []string{"fcmd-up0", "fcmd-vl0"}, hosts, "the uplink once, each vlan device once")
	require.Len(t, sent[*interfaces.SwInterfaceSetFlags](vpp), 2, "both come up")

	link, err := handle.LinkByName("fcmd-vl0")
	require.NoError(t, err)
	require.Equal(t, 1, link.Attrs().Promisc, "vlan sub-interfaces receive frames for other MACs")
	uplink, err := handle.LinkByName("fcmd-up0")
	require.NoError(t, err)
	require.Zero(t, uplink.Attrs().Promisc, "the uplink is not a vlan device")
}

func TestVlanDeviceOwnedByVPPGetsPromiscuousModeInVPP(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.None, nil, vppinit.WithNetlinkHandle(handle),
		vppinit.WithVlanDevices(vppOwnDevice))
	require.NoError(t, err)

	require.Empty(t, sent[*af_packet.AfPacketCreateV3](vpp))
	promisc := sent[*interfaces.SwInterfaceSetPromisc](vpp)
	require.Len(t, promisc, 1)
	require.Equal(t, vppOwnSwIfIndex, promisc[0].SwIfIndex)
	require.True(t, promisc[0].PromiscOn)
}

func TestVlanDeviceNowhereIsAnError(t *testing.T) {
	handle := node(t)
	vpp := newRecordingVPP(t, "")

	_, err := vppinit.Run(context.Background(), vpp.conn, vppinit.None, nil, vppinit.WithNetlinkHandle(handle),
		vppinit.WithVlanDevices("fcmd-nosuch0"))
	require.ErrorContains(t, err, "vlan device fcmd-nosuch0 is neither a kernel link nor a VPP interface")
}
