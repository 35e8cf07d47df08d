package xconnect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	ipsecapi "github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	vxlanapi "github.com/networkservicemesh/govpp/binapi/vxlan"
	wireguardapi "github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

func TestVxlanRequestAndClose(t *testing.T) {
	vpptest.Each(t, testVxlanRequestAndClose)
}

func testVxlanRequestAndClose(t *testing.T, backend vpptest.Backend) {
	const vni = 4242
	nscNS := newTestNetNS(t)
	hop := &nextHop{mechanismType: vxlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
		vxlanmech.ToMechanism(m).SetDstIP(remoteIP).SetVNI(vni).SetDstPort(testVxlanPort)
	}}
	kind := kindOn(backend)
	h := newHarness(t, backend, kind, hop)

	conn := h.request(t, kernelRequest("conn-vxlan", nscNS, "nsc-1", payload.Ethernet))

	tunnels := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](h.vpp)
	require.Len(t, tunnels, 1)
	tunnel := tunnels[0]
	require.True(t, tunnel.IsAdd)
	require.Equal(t, types.ToVppAddress(tunnelIP), tunnel.SrcAddress, "the tunnel starts at the node's tunnel IP")
	require.Equal(t, types.ToVppAddress(remoteIP), tunnel.DstAddress)
	require.Equal(t, uint32(vni), tunnel.Vni)
	require.Equal(t, testVxlanPort, tunnel.SrcPort, "port from WithVxlanOptions")
	require.Equal(t, testVxlanPort, tunnel.DstPort)
	require.Contains(t, h.vpp.interfaceNames(t), "vxlan_tunnel0")

	if kind == kernelif.Tap {
		toClient := tapCreatedFor(t, sentOfType[*tapv2.TapCreateV3](h.vpp), nscNS)
		require.Zero(t, toClient.TapFlags&tapv2.TAP_API_FLAG_TUN, "ethernet payload needs a tap, not a tun")
	}
	require.NotEmpty(t, sentOfType[*l2.SwInterfaceSetL2Xconnect](h.vpp), "ethernet payload is cross-connected at L2")

	h.close(t, conn)

	removed := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](h.vpp)
	require.Len(t, removed, 2)
	require.False(t, removed[1].IsAdd)
	require.Equal(t, tunnel.Vni, removed[1].Vni)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"))
	h.vpp.requireOnlyUplink(t)
}

func TestVlanRequestUsesTheSelectedDeviceAndClose(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		const vlanID = 100
		nscNS := newTestNetNS(t)
		hop := &nextHop{mechanismType: vlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
			vlanmech.ToMechanism(m).SetVlanID(vlanID)
		}}
		h := newHarnessWith(t, backend, kindOn(backend), hop, viaUplink)
		request := kernelRequest("conn-vlan", nscNS, "nsc-1", payload.Ethernet)
		request.GetConnection().Labels = map[string]string{"via": "gw0"}

		conn := h.request(t, request)

		subInterfaces := sentOfType[*interfaces.CreateVlanSubif](h.vpp)
		require.Len(t, subInterfaces, 1)
		require.Equal(t, uint32(vlanID), subInterfaces[0].VlanID)
		require.Equal(t, uplinkIndex(t, h.vpp), subInterfaces[0].SwIfIndex, "the sub-interface must sit on the device selected for via=gw0")

		h.close(t, conn)

		require.Len(t, sentOfType[*interfaces.DeleteSubif](h.vpp), 1)
		require.Nil(t, linkIn(t, nscNS, "nsc-1"))
		h.vpp.requireOnlyUplink(t)
	})
}

// VLAN 0 is the untagged device itself (upstream's Kernel2RVlanMultiNS, `vlan: 0`): sdk-vpp's
// vlan client bridges the client to the device's own interface and makes no sub-interface. That
// interface is the node's, not the connection's: it must not carry the connection's ID as its tag,
// neither while connected nor after Close.
func TestVlanZeroUsesTheDeviceItselfAndLeavesItUntagged(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nscNS := newTestNetNS(t)
		hop := &nextHop{mechanismType: vlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
			vlanmech.ToMechanism(m).SetVlanID(0)
		}}
		h := newHarnessWith(t, backend, kindOn(backend), hop, viaUplink)
		request := kernelRequest("conn-vlan-untagged", nscNS, "nsc-1", payload.Ethernet)
		request.GetConnection().Labels = map[string]string{"via": "gw0"}

		conn := h.request(t, request)

		require.Empty(t, sentOfType[*interfaces.CreateVlanSubif](h.vpp), "VLAN 0 is the device itself")
		uplink := uplinkIndex(t, h.vpp)
		for _, tagging := range sentOfType[*interfaces.SwInterfaceTagAddDel](h.vpp) {
			require.NotEqual(t, uplink, tagging.SwIfIndex, "the device's interface was tagged %q", tagging.Tag)
		}

		h.close(t, conn)

		require.Nil(t, linkIn(t, nscNS, "nsc-1"))
		h.vpp.requireOnlyUplink(t)
		for _, i := range h.vpp.Interfaces(t) {
			require.Empty(t, i.Tag, "%s keeps a tag after Close", i.Name)
		}
	})
}

func TestVlanRequestWithUnknownViaIsRefused(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nscNS := newTestNetNS(t)
		hop := &nextHop{mechanismType: vlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
			vlanmech.ToMechanism(m).SetVlanID(100)
		}}
		h := newHarnessWith(t, backend, kindOn(backend), hop, viaUplink)
		request := kernelRequest("conn-vlan-unknown", nscNS, "nsc-1", payload.Ethernet)
		request.GetConnection().Labels = map[string]string{"via": "gw9"}

		_, err := h.nsmgr.Request(h.ctx, request)
		require.ErrorContains(t, err, "gw9")
		require.Empty(t, sentOfType[*interfaces.CreateVlanSubif](h.vpp))
		require.Nil(t, linkIn(t, nscNS, "nsc-1"), "a refused Request must leave nothing behind")
		h.vpp.requireOnlyUplink(t)
	})
}

// viaUplink maps the vlan domain gw0 to VPP's uplink.
func viaUplink(vpp *testVPP) []xconnect.Option {
	return []xconnect.Option{xconnect.WithVlanDomainToDevice(map[string]string{"gw0": vpp.uplink})}
}

func TestWireguardRequestAndClose(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		tunnel := startEncryptedTunnel(t, backend, wireguardmech.MECHANISM)
		nscNS := tunnel.nsc.Path()

		conn := tunnel.request(t, kernelRequest("conn-wg", nscNS, "nsc-1", payload.IP))

		wgInterfaces := sentOfType[*wireguardapi.WireguardInterfaceCreate](tunnel.vpp)
		require.Len(t, wgInterfaces, 1)
		require.Equal(t, types.ToVppAddress(tunnelIP), wgInterfaces[0].Interface.SrcIP, "the tunnel starts at the node's tunnel IP")
		peers := sentOfType[*wireguardapi.WireguardPeerAdd](tunnel.vpp)
		require.Len(t, peers, 1)
		require.Equal(t, types.ToVppAddress(remoteIP), peers[0].Peer.Endpoint)
		require.Equal(t, uint16(51820), peers[0].Peer.Port)
		require.Equal(t, tunnel.remoteWireguardKey(t), peers[0].Peer.PublicKey)
		requireKernelEnd(t, nscNS, "nsc-1", "server-conn-wg", nscAddress)
		tunnel.requireTraffic(t)

		tunnel.close(t, conn)

		require.Len(t, sentOfType[*wireguardapi.WireguardPeerRemove](tunnel.vpp), 1)
		require.Len(t, sentOfType[*wireguardapi.WireguardInterfaceDelete](tunnel.vpp), 1)
		require.Nil(t, linkIn(t, nscNS, "nsc-1"))
		tunnel.requireOnlyUplinks(t)
	})
}

func TestIPSecRequestAndClose(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		tunnel := startEncryptedTunnel(t, backend, ipsecmech.MECHANISM)
		nscNS := tunnel.nsc.Path()

		conn := tunnel.request(t, kernelRequest("conn-ipsec", nscNS, "nsc-1", payload.IP))

		require.Len(t, sentOfType[*ipsecapi.IpsecItfCreate](tunnel.vpp), 1)
		responders := sentOfType[*ikev2.Ikev2SetResponder](tunnel.vpp)
		require.Len(t, responders, 1)
		require.Equal(t, types.ToVppAddress(remoteIP), responders[0].Responder.Addr)
		require.Equal(t, uplinkIndex(t, tunnel.vpp), responders[0].Responder.SwIfIndex, "IKEv2 must leave through the interface holding the tunnel IP")
		require.Len(t, sentOfType[*ikev2.Ikev2InitiateSaInit](tunnel.vpp), 1, "the client side initiates the SA")
		requireKernelEnd(t, nscNS, "nsc-1", "server-conn-ipsec", nscAddress)
		tunnel.requireTraffic(t)

		tunnel.close(t, conn)

		require.Len(t, sentOfType[*ipsecapi.IpsecItfDelete](tunnel.vpp), 1)
		profiles := sentOfType[*ikev2.Ikev2ProfileAddDel](tunnel.vpp)
		require.Len(t, profiles, 2)
		require.True(t, profiles[0].IsAdd)
		require.False(t, profiles[1].IsAdd, "the IKEv2 profile must be removed")
		require.Nil(t, linkIn(t, nscNS, "nsc-1"))
		tunnel.requireOnlyUplinks(t)
	})
}

// The forwarder on the endpoint's node receives the vxlan mechanism from the client's forwarder
// (through nsmgr) and completes it with its own end.
func TestIncomingVxlanRequestAndClose(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nseNS := newTestNetNS(t)
		h := newHarness(t, backend, kindOn(backend), kernelNextHop(nseNS, "nse-1"))
		request := kernelRequest("conn-vxlan-in", "", "", payload.Ethernet)
		incoming := &networkservice.Mechanism{Cls: cls.REMOTE, Type: vxlanmech.MECHANISM, Parameters: map[string]string{}}
		vxlanmech.ToMechanism(incoming).SetSrcIP(remoteIP).SetSrcPort(testVxlanPort)
		request.MechanismPreferences = []*networkservice.Mechanism{incoming}

		conn := h.request(t, request)

		accepted := vxlanmech.ToMechanism(conn.GetMechanism())
		require.NotNil(t, accepted)
		require.True(t, accepted.DstIP().Equal(tunnelIP), "the forwarder answers with its tunnel IP")
		require.Equal(t, testVxlanPort, accepted.DstPort(), "port from WithVxlanOptions")
		require.NotZero(t, accepted.VNI())

		tunnels := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](h.vpp)
		require.Len(t, tunnels, 1)
		require.Equal(t, types.ToVppAddress(tunnelIP), tunnels[0].SrcAddress)
		require.Equal(t, types.ToVppAddress(remoteIP), tunnels[0].DstAddress)
		require.Equal(t, accepted.VNI(), tunnels[0].Vni)
		require.Equal(t, testVxlanPort, tunnels[0].DstPort)
		requireKernelEnd(t, nseNS, "nse-1", "client-conn-vxlan-in", nseAddress)

		h.close(t, conn)

		removed := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](h.vpp)
		require.Len(t, removed, 2)
		require.False(t, removed[1].IsAdd)
		require.Nil(t, linkIn(t, nseNS, "nse-1"))
		h.vpp.requireOnlyUplink(t)
	})
}

// completeIKEv2 plays the remote peer of an IKEv2 exchange. VPP raises an ipsec interface's link
// once the SA it initiated is established, and sdk-vpp waits for that; the simulator negotiates
// nothing, so once the SA init was sent this raises the link the one way the simulator offers:
// admin up, over a connection of its own.
func completeIKEv2(ctx context.Context, t *testing.T, vpp *testVPP) {
	t.Helper()
	peer := vpp.Sim
	conn := vppsimtest.Dial(t, peer)
	go func() {
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			if len(vppsim.RequestsOf[*ikev2.Ikev2InitiateSaInit](peer)) == 0 {
				continue
			}
			for _, iface := range peer.State().Interfaces {
				if iface.Kind == state.KindIpsec && !iface.LinkUp {
					_, _ = interfaces.NewServiceClient(conn).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{
						SwIfIndex: interface_types.InterfaceIndex(iface.SwIfIndex), Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP,
					})
				}
			}
		}
	}()
}
