package restore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	govpp "go.fd.io/govpp"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// previousRun is a VPP simulator holding what a forwarder that died left: tagged interfaces of
// several kinds, plus an untagged one that is not the forwarder's.
type previousRun struct {
	sim    *vppsim.Sim
	conn   api.Connection
	client *vppsimtest.Netns
}

func startPreviousRun(t *testing.T) *previousRun {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and taps")
	}
	node := vppsimtest.NewNetns(t, "rst")
	client := vppsimtest.NewNetns(t, "rst")
	vppsimtest.Veth(t, node, "fwd-veth", "", client, "nsc-veth", "")
	sim, err := vppsim.Start(context.Background(), vppsim.Config{APISocket: filepath.Join(t.TempDir(), "api.sock"), Netns: node.Name})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	conn, err := govpp.Connect(sim.APISocket())
	require.NoError(t, err)
	t.Cleanup(conn.Disconnect)
	return &previousRun{sim: sim, conn: conn, client: client}
}

func (p *previousRun) tag(ctx context.Context, t *testing.T, index interface_types.InterfaceIndex, tag string) {
	t.Helper()
	_, err := interfaces.NewServiceClient(p.conn).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index, Tag: tag})
	require.NoError(t, err)
}

func (p *previousRun) tap(ctx context.Context, t *testing.T, hostName string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := tapv2.NewServiceClient(p.conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1,
		HostIfNameSet: true, HostIfName: hostName, HostNamespaceSet: true, HostNamespace: p.client.Name,
	})
	require.NoError(t, err)
	return reply.SwIfIndex
}

func (p *previousRun) interfaceNames() []string {
	var names []string
	for _, iface := range p.sim.State().Interfaces {
		names = append(names, iface.Name)
	}
	sort.Strings(names)
	return names
}

func (p *previousRun) clientHasLink(name string) bool {
	return p.client.Do(func() error {
		_, err := netlink.LinkByName(name)
		return err
	}) == nil
}

func TestVPPLeftoversAreTaggedInterfacesAndReleaseDeletesThemByKind(t *testing.T) {
	p := startPreviousRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	p.tag(ctx, t, p.tap(ctx, t, "nsm-a"), "conn-a")
	p.tap(ctx, t, "not-ours")
	src, _ := ip_types.ParseAddress("10.60.0.1")
	dst, _ := ip_types.ParseAddress("10.60.0.2")
	tunnel, err := vxlan.NewServiceClient(p.conn).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
		IsAdd: true, Instance: ^uint32(0), SrcAddress: src, DstAddress: dst, DecapNextIndex: ^uint32(0), Vni: 42,
	})
	require.NoError(t, err)
	p.tag(ctx, t, tunnel.SwIfIndex, "conn-b")
	afPacket, err := af_packet.NewServiceClient(p.conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "fwd-veth", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	p.tag(ctx, t, afPacket.SwIfIndex, "conn-b")

	found, err := scanVPP(ctx, p.conn)
	require.NoError(t, err)
	leftovers := newLeftovers(found)
	require.Equal(t, []string{"conn-a", "conn-b"}, leftovers.Owners())

	leftovers.ReleaseOwned(ctx, "conn-a")
	require.False(t, p.clientHasLink("nsm-a"), "conn-a's tap is still in the client namespace")
	require.True(t, p.clientHasLink("not-ours"), "an untagged tap was released")
	require.Equal(t, "[host-fwd-veth local0 tap1 vxlan_tunnel0]", fmt.Sprint(p.interfaceNames()))

	leftovers.ReleaseAll(ctx)
	require.Equal(t, "[local0 tap1]", fmt.Sprint(p.interfaceNames()), "tagged vxlan and af_packet interfaces must be gone, the untagged tap kept")
	require.Empty(t, leftovers.Owners())
}
