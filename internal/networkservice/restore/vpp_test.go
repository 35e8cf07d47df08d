package restore

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vxlan"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// sharedVPP is a VPP simulator shared with another agent, in a node namespace that stands for the
// forwarder's, with a client pod's namespace beside it.
type sharedVPP struct {
	sim      *vppsim.Sim
	conn     api.Connection
	node     *vppsimtest.Netns
	nodeLink *netlink.Handle
	client   *clientNetns
}

func newSharedVPP(t *testing.T) *sharedVPP {
	t.Helper()
	requireRoot(t)
	node := vppsimtest.NewNetns(t, "rst")
	client := newClientNetns(t)
	sim := vppsimtest.StartSim(t, node.Name)
	ns, err := netns.GetFromName(node.Name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	handle, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	t.Cleanup(handle.Close)
	return &sharedVPP{sim: sim, conn: vppsimtest.Dial(t, sim), node: node, nodeLink: handle, client: client}
}

func (v *sharedVPP) tag(ctx context.Context, t *testing.T, index interface_types.InterfaceIndex, tag string) {
	t.Helper()
	_, err := interfaces.NewServiceClient(v.conn).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: index, Tag: tag})
	require.NoError(t, err)
}

func (v *sharedVPP) tap(ctx context.Context, t *testing.T, hostName, tag string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := tapv2.NewServiceClient(v.conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1,
		HostIfNameSet: true, HostIfName: hostName, HostNamespaceSet: true, HostNamespace: v.client.name,
	})
	require.NoError(t, err)
	if tag != "" {
		v.tag(ctx, t, reply.SwIfIndex, tag)
	}
	return reply.SwIfIndex
}

// veth makes a veth pair in the node namespace whose first end carries alias, bound to VPP as an
// af_packet interface tagged tag (none when empty).
func (v *sharedVPP) veth(ctx context.Context, t *testing.T, name, alias, tag string) interface_types.InterfaceIndex {
	t.Helper()
	require.NoError(t, v.nodeLink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}))
	link, err := v.nodeLink.LinkByName(name)
	require.NoError(t, err)
	require.NoError(t, v.nodeLink.LinkSetAlias(link, alias))
	require.NoError(t, v.nodeLink.LinkSetUp(link))
	if tag == "" {
		return 0
	}
	reply, err := af_packet.NewServiceClient(v.conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: name, UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	v.tag(ctx, t, reply.SwIfIndex, tag)
	return reply.SwIfIndex
}

func (v *sharedVPP) vxlanTunnel(ctx context.Context, t *testing.T, dst string, vni uint32, tag string) interface_types.InterfaceIndex {
	t.Helper()
	src, _ := ip_types.ParseAddress("10.60.0.1")
	to, _ := ip_types.ParseAddress(dst)
	tunnel, err := vxlan.NewServiceClient(v.conn).VxlanAddDelTunnelV3(ctx, &vxlan.VxlanAddDelTunnelV3{
		IsAdd: true, Instance: ^uint32(0), SrcAddress: src, DstAddress: to, DecapNextIndex: ^uint32(0), Vni: vni,
	})
	require.NoError(t, err)
	v.tag(ctx, t, tunnel.SwIfIndex, tag)
	return tunnel.SwIfIndex
}

// interfaces renders what VPP holds: "name tag", sorted.
func (v *sharedVPP) interfaces() []string {
	var out []string
	for _, i := range v.sim.State().Interfaces {
		out = append(out, i.Name+" "+i.Tag)
	}
	sort.Strings(out)
	return out
}

func (v *sharedVPP) nodeAliases(t *testing.T) []string {
	t.Helper()
	links, err := v.nodeLink.LinkList()
	require.NoError(t, err)
	var out []string
	for _, l := range links {
		if l.Attrs().Alias != "" {
			out = append(out, l.Attrs().Alias)
		}
	}
	sort.Strings(out)
	return out
}

// foreignMarkedState puts a rule and a route carrying this forwarder's mark into the client's
// namespace, as a foreign agent using the same protocol number, or a leftover nobody recorded, does.
func (v *sharedVPP) foreignMarkedState(t *testing.T) {
	t.Helper()
	lo, err := v.client.handle.LinkByName("lo")
	require.NoError(t, err)
	_, src, _ := net.ParseCIDR("10.99.0.0/24")
	rule := netlink.NewRule()
	rule.Src, rule.Table, rule.Priority, rule.Protocol = src, 12345, 20500, routeview.ForwarderProtocol
	require.NoError(t, v.client.handle.RuleAdd(rule))
	_, dst, _ := net.ParseCIDR("10.98.0.0/16")
	require.NoError(t, v.client.handle.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: dst, Table: 12345, Protocol: routeview.ForwarderProtocol}))
}

// recordConnection writes what a run of this forwarder records for a connection whose client's
// side is a kernel interface in the client pod (a tap, or a veth pair when peer names the
// forwarder's end) and whose next hop's side is a vxlan tunnel.
func recordConnection(t *testing.T, j *journal.Journal, client *clientNetns, id string, clientSide, nextHopSide interface_types.InterfaceIndex, peer *journal.Link) {
	t.Helper()
	incoming := client.connection(id, "nsm-"+id, 1)
	kernel.ToMechanism(incoming.GetMechanism()).SetNetNSURL(client.fileURL)
	outgoing := incoming.Clone()
	outgoing.Id = "next-" + id
	outgoing.Mechanism = &networkservice.Mechanism{Cls: cls.REMOTE, Type: vxlanmech.MECHANISM, Parameters: map[string]string{}}
	vxlanmech.ToMechanism(outgoing.Mechanism).SetSrcIP(net.ParseIP("10.60.0.1")).SetDstIP(net.ParseIP("10.60.0.2")).SetVNI(2)
	require.NoError(t, j.Begin(id, incoming))
	require.NoError(t, j.Intend(id, outgoing))
	require.NoError(t, j.Commit(id, incoming, outgoing, []journal.Interface{
		{Tag: id, SwIfIndex: uint32(clientSide), Peer: peer},
		{Outgoing: true, Tag: outgoing.GetId(), SwIfIndex: uint32(nextHopSide)},
	}))
}

// A VPP shared with another agent holds interfaces tagged by it, and the forwarder's namespace and
// the client's hold look-alike state. Restart after restart, and expiry after expiry, only what the
// journal names is released; the rest stays untouched.
func TestOnlyWhatTheJournalNamesIsReleasedOnASharedVPP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	journalDir := filepath.Join(t.TempDir(), "forwarder-a")

	// Another agent's: tagged interfaces of every kind, a veth with a look-alike alias, marked state.
	v.tap(ctx, t, "cali1", "calico-pod-1")
	v.tap(ctx, t, "untagged", "")
	v.veth(ctx, t, "cali2", "veth-server-calico-pod-2", "calico-pod-2")
	v.vxlanTunnel(ctx, t, "10.60.0.9", 9, "k8s-foreign-tunnel")
	v.foreignMarkedState(t)
	foreignInterfaces, foreignAliases, foreignMarked := v.interfaces(), v.nodeAliases(t), v.client.marked(t)

	// This forwarder's previous run: two connections, one over a tap and a vxlan tunnel, one over
	// a veth pair; the journal names both.
	j, err := journal.Open(ctx, journalDir)
	require.NoError(t, err)
	recordConnection(t, j, v.client, "conn-a", v.tap(ctx, t, "nsm-conn-a", "conn-a"), v.vxlanTunnel(ctx, t, "10.60.0.2", 2, "next-conn-a"), nil)
	recordConnection(t, j, v.client, "conn-b", v.veth(ctx, t, "fwd-b", "veth-server-nsc-conn-b", "conn-b"), 0, v.forwarderEnd(t, "fwd-b"))
	require.NoError(t, j.Close())
	require.Len(t, v.interfaces(), len(foreignInterfaces)+3)

	for restart := range 3 {
		j, err := journal.Open(ctx, journalDir)
		require.NoError(t, err)
		leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, true)
		require.NoError(t, err)
		if restart == 0 {
			require.Equal(t, []string{"conn-a", "conn-b"}, leftovers.Owners())
		} else {
			require.Empty(t, leftovers.Owners(), "restart %d: released connections came back", restart)
		}
		require.NoError(t, leftovers.ReleaseAll(ctx), "restart %d", restart)
		require.NoError(t, j.Close())

		require.Equal(t, foreignInterfaces, v.interfaces(), "restart %d: VPP holds other interfaces than the other agent's", restart)
		require.Equal(t, foreignAliases, v.nodeAliases(t), "restart %d: the forwarder's namespace holds other veths than the look-alike", restart)
		require.Equal(t, foreignMarked, v.client.marked(t), "restart %d: foreign marked rules or routes were touched", restart)
	}
	require.Empty(t, recordIDs(t, journalDir))
	_, err = v.client.handle.LinkByName("nsm-conn-a")
	require.Error(t, err, fmt.Sprintf("the released tap's kernel side is still in the client's namespace: %v", err))
}
