package xconnect_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	vxlanapi "github.com/networkservicemesh/govpp/binapi/vxlan"
	wireguardapi "github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/xconnect"
)

// Documentation addresses (RFC 5737): the fake VPP sends no traffic anywhere.
var (
	tunnelIP      = net.ParseIP("192.0.2.1")
	remoteIP      = net.ParseIP("192.0.2.2")
	nscAddress    = "172.16.0.1/32"
	nseAddress    = "172.16.0.2/32"
	testVxlanPort = uint16(4790)
)

type harness struct {
	ctx       context.Context
	vpp       testVPP
	forwarder endpoint.Endpoint
	hop       *nextHop
}

// newHarness runs the forwarder endpoint in-process on a test VPP, connecting onward to hop. The
// test plays nsmgr: it calls the endpoint directly with the next hop's URL already chosen.
func newHarness(t *testing.T, kind kernelif.Kind, hop *nextHop, opts ...xconnect.Option) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hopURL := hop.serve(ctx, t)
	vpp := startTestVPP(t, tunnelIP)
	// An existing file that is no stats socket: the metrics elements fail at once instead of
	// waiting seconds for /run/vpp/stats.sock.
	noStats := filepath.Join(t.TempDir(), "stats.sock")
	require.NoError(t, os.WriteFile(noStats, nil, 0o600))
	forwarder, err := xconnect.NewServer(ctx, sandbox.GenerateTestToken, vpp, tunnelIP, append([]xconnect.Option{
		xconnect.WithName("forwarder"),
		xconnect.WithKernelInterface(kind),
		xconnect.WithVxlanOptions(vxlan.WithPort(testVxlanPort)),
		xconnect.WithDialOptions(sandbox.DialOptions()...),
		xconnect.WithDialTimeout(5 * time.Second),
		xconnect.WithMetricsOptions(metrics.WithSocket(noStats)),
	}, opts...)...)
	require.NoError(t, err)
	return &harness{ctx: clienturlctx.WithClientURL(ctx, hopURL), vpp: vpp, forwarder: forwarder, hop: hop}
}

func (h *harness) request(t *testing.T, request *networkservice.NetworkServiceRequest) *networkservice.Connection {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	conn, err := h.forwarder.Request(ctx, request)
	require.NoError(t, err)
	return conn
}

func (h *harness) close(t *testing.T, conn *networkservice.Connection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	_, err := h.forwarder.Close(ctx, conn)
	require.NoError(t, err)
}

// kernelRequest is what nsmgr forwards for a client asking for a kernel interface in netnsPath.
func kernelRequest(connID, netnsPath, ifName, connPayload string) *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{
			Id:             connID,
			NetworkService: "ns",
			Payload:        connPayload,
			Path: &networkservice.Path{PathSegments: []*networkservice.PathSegment{{
				Name: "nsc", Id: connID, Expires: timestamppb.New(time.Now().Add(time.Hour)),
			}}},
			Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
				SrcIpAddrs: []string{nscAddress},
				DstIpAddrs: []string{nseAddress},
			}},
		},
		MechanismPreferences: []*networkservice.Mechanism{{
			Cls:  cls.LOCAL,
			Type: kernelmech.MECHANISM,
			Parameters: map[string]string{
				kernelmech.NetNSURL:         "file://" + netnsPath,
				kernelmech.InterfaceNameKey: ifName,
			},
		}},
	}
}

// kernelNextHop accepts the kernel mechanism into its own namespace, as a local NSE does.
func kernelNextHop(netnsPath, ifName string) *nextHop {
	return &nextHop{mechanismType: kernelmech.MECHANISM, configure: func(m *networkservice.Mechanism) {
		m.Parameters[kernelmech.NetNSURL] = "file://" + netnsPath
		m.Parameters[kernelmech.InterfaceNameKey] = ifName
	}}
}

func requireKernelEnd(t *testing.T, netnsPath, ifName, alias, address string) netlink.Link {
	t.Helper()
	link := linkIn(t, netnsPath, ifName)
	require.NotNil(t, link, "no %s in %s", ifName, netnsPath)
	require.Equal(t, alias, link.Attrs().Alias, "the alias carries the connection ID for recovery")
	require.Contains(t, addressesOf(t, netnsPath, link), address)
	return link
}

func tapCreatedFor(t *testing.T, creates []*tapv2.TapCreateV3, netnsPath string) *tapv2.TapCreateV3 {
	t.Helper()
	for _, create := range creates {
		if create.HostNamespace == netnsPath {
			return create
		}
	}
	t.Fatalf("no tap_create_v3 for %s among %+v", netnsPath, creates)
	return nil
}

func TestKernelTapRequestAndClose(t *testing.T) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, kernelif.Tap, kernelNextHop(nseNS, "nse-1"))

	conn := h.request(t, kernelRequest("conn-tap", nscNS, "nsc-1", payload.IP))

	creates := sentOfType[*tapv2.TapCreateV3](h.vpp)
	require.Len(t, creates, 2, "one tap toward the client, one toward the endpoint")
	toClient, toEndpoint := tapCreatedFor(t, creates, nscNS), tapCreatedFor(t, creates, nseNS)
	require.Equal(t, "nsc-1", toClient.HostIfName)
	require.Equal(t, "nse-1", toEndpoint.HostIfName)
	require.NotZero(t, toClient.TapFlags&tapv2.TAP_API_FLAG_TUN, "IP payload needs a tun")
	require.Empty(t, sentOfType[*af_packet.AfPacketCreateV3](h.vpp), "tap kind must not use af_packet")

	requireKernelEnd(t, nscNS, "nsc-1", "server-conn-tap", nscAddress)
	requireKernelEnd(t, nseNS, "nse-1", "client-conn-tap", nseAddress)

	tags := sentOfType[*interfaces.SwInterfaceTagAddDel](h.vpp)
	require.Len(t, tags, 2)
	forwarderConnID := conn.GetPath().GetPathSegments()[1].GetId()
	for _, tag := range tags {
		require.True(t, tag.IsAdd)
		require.Equal(t, forwarderConnID, tag.Tag, "VPP interfaces are tagged with the forwarder's connection ID")
	}

	crossConnects := sentOfType[*l3xc.L3xcUpdate](h.vpp)
	require.NotEmpty(t, crossConnects, "IP payload is cross-connected with l3xc")
	tagged := map[uint32]bool{}
	for _, tag := range tags {
		tagged[uint32(tag.SwIfIndex)] = true
	}
	for _, xc := range crossConnects {
		require.True(t, tagged[uint32(xc.L3xc.SwIfIndex)], "l3xc on an interface the chain did not create")
		require.NotEmpty(t, xc.L3xc.Paths)
		require.True(t, tagged[xc.L3xc.Paths[0].SwIfIndex], "l3xc toward an interface the chain did not create")
		require.NotEqual(t, uint32(xc.L3xc.SwIfIndex), xc.L3xc.Paths[0].SwIfIndex, "l3xc must lead to the other side")
	}

	h.close(t, conn)

	deletes := sentOfType[*tapv2.TapDeleteV2](h.vpp)
	require.Len(t, deletes, 2)
	require.NotEmpty(t, sentOfType[*l3xc.L3xcDel](h.vpp))
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "client end left behind")
	require.Nil(t, linkIn(t, nseNS, "nse-1"), "endpoint end left behind")
	require.Equal(t, 1, h.hop.closed(), "Close must reach the next hop")
}

func TestKernelVethRequestAndClose(t *testing.T) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, kernelif.Veth, kernelNextHop(nseNS, "nse-1"))

	conn := h.request(t, kernelRequest("conn-veth", nscNS, "nsc-1", payload.IP))

	require.Empty(t, sentOfType[*tapv2.TapCreateV3](h.vpp), "veth kind must not create taps")
	afPackets := sentOfType[*af_packet.AfPacketCreateV3](h.vpp)
	require.Len(t, afPackets, 2, "VPP opens the forwarder end of both veth pairs")

	for _, end := range []struct{ netns, name, alias, address string }{
		{nscNS, "nsc-1", "server-conn-veth", nscAddress},
		{nseNS, "nse-1", "client-conn-veth", nseAddress},
	} {
		link := requireKernelEnd(t, end.netns, end.name, end.alias, end.address)
		require.Equal(t, "veth", link.Type())
		// A veth's parent index is its peer's index in the peer's namespace.
		peer, err := netlink.LinkByIndex(link.Attrs().ParentIndex)
		require.NoError(t, err, "the forwarder end must stay in the forwarder's namespace")
		opened := false
		for _, create := range afPackets {
			opened = opened || create.HostIfName == peer.Attrs().Name
		}
		require.True(t, opened, "af_packet_create_v3 was not sent for %s", peer.Attrs().Name)
	}

	h.close(t, conn)

	require.Len(t, sentOfType[*af_packet.AfPacketDelete](h.vpp), 2)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "client end left behind")
	require.Nil(t, linkIn(t, nseNS, "nse-1"), "endpoint end left behind")
}

func TestVxlanRequestAndClose(t *testing.T) {
	const vni = 4242
	nscNS := newTestNetNS(t)
	hop := &nextHop{mechanismType: vxlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
		vxlanmech.ToMechanism(m).SetDstIP(remoteIP).SetVNI(vni).SetDstPort(testVxlanPort)
	}}
	h := newHarness(t, kernelif.Tap, hop)

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

	toClient := tapCreatedFor(t, sentOfType[*tapv2.TapCreateV3](h.vpp), nscNS)
	require.Zero(t, toClient.TapFlags&tapv2.TAP_API_FLAG_TUN, "ethernet payload needs a tap, not a tun")
	require.NotEmpty(t, sentOfType[*l2.SwInterfaceSetL2Xconnect](h.vpp), "ethernet payload is cross-connected at L2")

	h.close(t, conn)

	removed := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](h.vpp)
	require.Len(t, removed, 2)
	require.False(t, removed[1].IsAdd)
	require.Equal(t, tunnel.Vni, removed[1].Vni)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"))
}

func TestVlanRequestUsesTheSelectedDeviceAndClose(t *testing.T) {
	const vlanID = 100
	nscNS := newTestNetNS(t)
	hop := &nextHop{mechanismType: vlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
		vlanmech.ToMechanism(m).SetVlanID(vlanID)
	}}
	h := newHarness(t, kernelif.Tap, hop, xconnect.WithVlanDomainToDevice(map[string]string{"gw0": "uplink"}))
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
}

func TestVlanRequestWithUnknownViaIsRefused(t *testing.T) {
	nscNS := newTestNetNS(t)
	hop := &nextHop{mechanismType: vlanmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
		vlanmech.ToMechanism(m).SetVlanID(100)
	}}
	h := newHarness(t, kernelif.Tap, hop, xconnect.WithVlanDomainToDevice(map[string]string{"gw0": "uplink"}))
	request := kernelRequest("conn-vlan-unknown", nscNS, "nsc-1", payload.Ethernet)
	request.GetConnection().Labels = map[string]string{"via": "gw9"}

	_, err := h.forwarder.Request(h.ctx, request)
	require.ErrorContains(t, err, "gw9")
	require.Empty(t, sentOfType[*interfaces.CreateVlanSubif](h.vpp))
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "a refused Request must leave nothing behind")
}

func TestMalformedRequestIsRefusedBeforeVPPIsTouched(t *testing.T) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, kernelif.Tap, kernelNextHop(nseNS, "nse-1"))
	request := kernelRequest("conn-bad", nscNS, "nsc-1", payload.IP)
	request.GetConnection().GetContext().GetIpContext().SrcIpAddrs = []string{"172.16.0.1"}

	_, err := h.forwarder.Request(h.ctx, request)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), `"172.16.0.1"`)
	require.Empty(t, sentOfType[*tapv2.TapCreateV3](h.vpp))
	require.Nil(t, linkIn(t, nscNS, "nsc-1"))
}

func TestWireguardRequestAndClose(t *testing.T) {
	nscNS := newTestNetNS(t)
	remoteKey, err := wgtypes.GeneratePrivateKey()
	require.NoError(t, err)
	hop := &nextHop{mechanismType: wireguardmech.MECHANISM, remote: true, configure: func(m *networkservice.Mechanism) {
		wireguardmech.ToMechanism(m).SetDstIP(remoteIP).SetDstPublicKey(remoteKey.PublicKey().String()).SetDstPort(51820)
	}}
	h := newHarness(t, kernelif.Tap, hop)

	conn := h.request(t, kernelRequest("conn-wg", nscNS, "nsc-1", payload.IP))

	wgInterfaces := sentOfType[*wireguardapi.WireguardInterfaceCreate](h.vpp)
	require.Len(t, wgInterfaces, 1)
	require.Equal(t, types.ToVppAddress(tunnelIP), wgInterfaces[0].Interface.SrcIP, "the tunnel starts at the node's tunnel IP")
	peers := sentOfType[*wireguardapi.WireguardPeerAdd](h.vpp)
	require.Len(t, peers, 1)
	require.Equal(t, types.ToVppAddress(remoteIP), peers[0].Peer.Endpoint)
	require.Equal(t, uint16(51820), peers[0].Peer.Port)
	publicKey := remoteKey.PublicKey()
	require.Equal(t, publicKey[:], peers[0].Peer.PublicKey)
	requireKernelEnd(t, nscNS, "nsc-1", "server-conn-wg", nscAddress)

	h.close(t, conn)

	require.Len(t, sentOfType[*wireguardapi.WireguardPeerRemove](h.vpp), 1)
	require.Len(t, sentOfType[*wireguardapi.WireguardInterfaceDelete](h.vpp), 1)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"))
}
