package xconnect_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// uplinkHostName is the node's uplink when VPP has a node namespace of its own.
const uplinkHostName = "uplink"

// testVPP is the VPP the chain tests drive, the simulator (test/vppsim) or a real VPP
// (test/realvpp), both carrying real frames, after an uplink init gave it the node's uplink
// holding the node's tunnel IP; with a recorded govpp connection to it.
type testVPP struct {
	*vpptest.VPP
	// uplink is the uplink's kernel name in VPP's namespace.
	uplink   string
	tunnelIP net.IP
	// initRequests counts the requests of the uplink init, which the forwarder did not send.
	initRequests int
}

// startTestVPP runs a VPP of backend in node, or in the test process's namespace when node is
// nil, as VPP shares the forwarder's pod. The veth kernel mechanism needs the latter: it leaves
// the forwarder's end of each pair in the forwarder's namespace, where VPP binds af_packet to it.
// The uplink holding tunnelIP is a veth to a remote namespace holding remoteIP. Only a node
// namespace gets a kernel address on it, so a VPP in the test process's namespace never changes
// that namespace's routing, and tunnels lead nowhere but into the remote namespace.
func startTestVPP(t *testing.T, backend vpptest.Backend, node *vppsimtest.Netns) *testVPP {
	t.Helper()
	remote := vppsimtest.NewNetns(t, netnsPrefix)
	if node == nil {
		return startTestVPPOn(t, backend, nil, ownNamespaceVeth(t, remote, uplinkHostName, prefixOf(remoteIP)), tunnelIP)
	}
	vppsimtest.Veth(t, node, uplinkHostName, prefixOf(tunnelIP), remote, uplinkHostName, prefixOf(remoteIP))
	return startTestVPPOn(t, backend, node, uplinkHostName, tunnelIP)
}

// startTestVPPOn runs a VPP of backend in node (nil: the test process's namespace) whose uplink
// init takes the existing link uplink there and gives it address.
func startTestVPPOn(t *testing.T, backend vpptest.Backend, node *vppsimtest.Netns, uplink string, address net.IP) *testVPP {
	t.Helper()
	vpp := &testVPP{VPP: vpptest.Start(t, backend, node), uplink: uplink, tunnelIP: address}
	vpp.uplinkInit(t)
	vpp.initRequests = len(vpp.Requests())
	return vpp
}

// uplinkInit does what the forwarder's uplink init does: VPP takes the uplink with af_packet and
// holds the tunnel IP on it.
func (v *testVPP) uplinkInit(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	created, err := af_packet.NewServiceClient(v).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: v.uplink, UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	prefix, err := ip_types.ParseAddressWithPrefix(prefixOf(v.tunnelIP))
	require.NoError(t, err)
	_, err = interfaces.NewServiceClient(v).SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: created.SwIfIndex, IsAdd: true, Prefix: prefix,
	})
	require.NoError(t, err)
	_, err = interfaces.NewServiceClient(v).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{
		SwIfIndex: created.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP,
	})
	require.NoError(t, err)
}

// sentOfType returns the requests of type T the forwarder sent, in order: what was recorded
// after the uplink init.
func sentOfType[T api.Message](vpp *testVPP) []T {
	var matching []T
	for _, msg := range vpp.Requests()[vpp.initRequests:] {
		if typed, ok := msg.(T); ok {
			matching = append(matching, typed)
		}
	}
	return matching
}

// interfaceNames lists VPP's interfaces by name, sorted.
func (v *testVPP) interfaceNames(t *testing.T) []string {
	t.Helper()
	names := v.InterfaceNames(t)
	sort.Strings(names)
	return names
}

// requireOnlyUplink fails unless VPP is back to what uplink init left: local0 and the uplink.
func (v *testVPP) requireOnlyUplink(t *testing.T) {
	t.Helper()
	require.Equal(t, []string{"host-" + v.uplink, "local0"}, v.interfaceNames(t), "VPP interfaces left behind")
}

// uplinkIndex asks VPP which interface holds its tunnel IP.
func uplinkIndex(t *testing.T, vpp *testVPP) interface_types.InterfaceIndex {
	tunnelIP := vpp.tunnelIP
	t.Helper()
	ctx := context.Background()
	// The connection's unrecorded side: these dumps are the test's, not the forwarder's.
	conn := vpp.Conn.Connection
	dump, err := interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	for details, err := dump.Recv(); err != io.EOF; details, err = dump.Recv() {
		require.NoError(t, err)
		addresses, err := ip.NewServiceClient(conn).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: details.SwIfIndex, IsIPv6: tunnelIP.To4() == nil})
		require.NoError(t, err)
		for address, err := addresses.Recv(); err != io.EOF; address, err = addresses.Recv() {
			require.NoError(t, err)
			if types.FromVppAddressWithPrefix(address.Prefix).IP.Equal(tunnelIP) {
				return details.SwIfIndex
			}
		}
	}
	t.Fatalf("no VPP interface holds %s", tunnelIP)
	return 0
}

func prefixOf(address net.IP) string {
	return (&net.IPNet{IP: address, Mask: net.CIDRMask(24, 8*len(address.To4()))}).String()
}

// ownNamespaceVethPair creates a veth pair with both ends in the test process's namespace, up and
// without addresses, and returns the ends' names: the uplinks of two VPPs sharing that namespace.
func ownNamespaceVethPair(t *testing.T) (string, string) {
	t.Helper()
	a, b := randomLinkName(), randomLinkName()
	require.NoError(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}))
	t.Cleanup(func() {
		if link, err := netlink.LinkByName(a); err == nil {
			_ = netlink.LinkDel(link)
		}
	})
	for _, name := range []string{a, b} {
		link, err := netlink.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, netlink.LinkSetUp(link))
	}
	return a, b
}

// randomLinkName is a link name of this package's tests, unique enough for one namespace.
func randomLinkName() string {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return netnsPrefix + hex.EncodeToString(suffix)
}

// ownNamespaceVeth creates a veth pair from the test process's namespace into peer, addresses and
// brings up peer's end only, and returns the name of the end left in the test process's namespace.
// Deleting peer deletes the pair; the cleanup covers a peer that outlives the test.
func ownNamespaceVeth(t *testing.T, peer *vppsimtest.Netns, peerName, peerCIDR string) string {
	t.Helper()
	name := randomLinkName()
	peerNs, err := netns.GetFromName(peer.Name)
	require.NoError(t, err)
	defer func() { _ = peerNs.Close() }()
	require.NoError(t, netlink.LinkAdd(&netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peerName, PeerNamespace: netlink.NsFd(int(peerNs)),
	}))
	t.Cleanup(func() {
		if link, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(link)
		}
	})
	link, err := netlink.LinkByName(name)
	require.NoError(t, err)
	require.NoError(t, netlink.LinkSetUp(link))
	peer.AddrAdd(t, peerName, peerCIDR)
	return name
}
