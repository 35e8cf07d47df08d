package vppsim_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func createTap(ctx context.Context, t *testing.T, conn api.Connection, ns *vppsimtest.Netns, name string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID:               ^uint32(0),
		UseRandomMac:     true,
		NumRxQueues:      1,
		HostIfNameSet:    true,
		HostIfName:       name,
		HostNamespaceSet: true,
		HostNamespace:    ns.Name,
		HostMtuSet:       true,
		HostMtuSize:      1400,
	})
	require.NoError(t, err)
	setUp(ctx, t, conn, reply.SwIfIndex)
	return reply.SwIfIndex
}

func setUp(ctx context.Context, t *testing.T, conn api.Connection, idx interface_types.InterfaceIndex) {
	t.Helper()
	_, err := interfaces.NewServiceClient(conn).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{
		SwIfIndex: idx,
		Flags:     interface_types.IF_STATUS_API_FLAG_ADMIN_UP,
	})
	require.NoError(t, err)
}

func xconnect(ctx context.Context, t *testing.T, conn api.Connection, rx, tx interface_types.InterfaceIndex, enable bool) {
	t.Helper()
	_, err := l2.NewServiceClient(conn).SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: rx, TxSwIfIndex: tx, Enable: enable})
	require.NoError(t, err)
}

func hostLink(t *testing.T, ns *vppsimtest.Netns, name string) (netlink.Link, error) {
	t.Helper()
	var link netlink.Link
	err := ns.Do(func() error {
		l, err := netlink.LinkByName(name)
		link = l
		return err
	})
	return link, err
}

// TestTapXconnectCarriesPing is the first acceptance test: two taps, two
// namespaces, an L2 cross-connect in the simulator, and a real ping across it.
func TestTapXconnectCarriesPing(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	left := vppsimtest.NewNetns(t, nsPrefix)
	right := vppsimtest.NewNetns(t, nsPrefix)

	tapL := createTap(ctx, t, conn, left, "nsm-left")
	tapR := createTap(ctx, t, conn, right, "nsm-right")

	link, err := hostLink(t, left, "nsm-left")
	require.NoError(t, err, "the tap must exist in the namespace VPP was asked for")
	require.Equal(t, 1400, link.Attrs().MTU)
	tuntap, ok := link.(*netlink.Tuntap)
	require.True(t, ok, "want a tuntap device, got %s", link.Type())
	require.Equal(t, netlink.TUNTAP_MODE_TAP, tuntap.Mode)

	left.AddrAdd(t, "nsm-left", "10.60.0.1/24")
	right.AddrAdd(t, "nsm-right", "10.60.0.2/24")
	src, dst := mustAddr(t, "10.60.0.1"), mustAddr(t, "10.60.0.2")

	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond), "no xconnect must mean no ping")

	xconnect(ctx, t, conn, tapL, tapR, true)
	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond), "one direction alone must not carry a ping")
	xconnect(ctx, t, conn, tapR, tapL, true)
	require.NoError(t, vppsimtest.Ping(left, src, dst, 5*time.Second))

	// Dumps show what was created.
	xcs, err := l2.NewServiceClient(conn).L2XconnectDump(ctx, &l2.L2XconnectDump{})
	require.NoError(t, err)
	var pairs [][2]interface_types.InterfaceIndex
	for _, d := range recvAll(t, xcs.Recv) {
		pairs = append(pairs, [2]interface_types.InterfaceIndex{d.RxSwIfIndex, d.TxSwIfIndex})
	}
	require.ElementsMatch(t, [][2]interface_types.InterfaceIndex{{tapL, tapR}, {tapR, tapL}}, pairs)

	taps, err := tapv2.NewServiceClient(conn).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	var hostNames []string
	for _, d := range recvAll(t, taps.Recv) {
		hostNames = append(hostNames, d.HostIfName)
	}
	require.ElementsMatch(t, []string{"nsm-left", "nsm-right"}, hostNames)

	xconnect(ctx, t, conn, tapR, tapL, false)
	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond), "deleting the xconnect must stop the ping")

	// Admin down stops traffic too, even with both directions configured.
	xconnect(ctx, t, conn, tapR, tapL, true)
	require.NoError(t, vppsimtest.Ping(left, src, dst, 5*time.Second))
	_, err = interfaces.NewServiceClient(conn).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: tapR})
	require.NoError(t, err)
	require.Error(t, vppsimtest.Ping(left, src, dst, 700*time.Millisecond), "a disabled interface must not forward")

	_, err = tapv2.NewServiceClient(conn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: tapL})
	require.NoError(t, err)
	_, err = hostLink(t, left, "nsm-left")
	require.Error(t, err, "tap_delete_v2 must remove the host interface")
	require.NotContains(t, sim.State().Interfaces, uint32(tapL))
	require.Nil(t, sim.State().Interfaces[uint32(tapR)].L2XconnectTx, "an xconnect to a deleted interface is gone with it")
}

// TestCloseRemovesTaps checks the crash semantics: state and taps go away, and a new
// simulator on the same socket starts empty.
func TestCloseRemovesTaps(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	ns := vppsimtest.NewNetns(t, nsPrefix)
	createTap(ctx, t, conn, ns, "nsm-crash")
	_, err := hostLink(t, ns, "nsm-crash")
	require.NoError(t, err)

	require.NoError(t, sim.Close())
	_, err = hostLink(t, ns, "nsm-crash")
	require.Error(t, err, "a dead VPP's taps disappear")

	again := startSimAt(t, sim.APISocket(), "")
	require.Len(t, again.State().Interfaces, 1, "a restarted VPP has only local0")
	conn2 := connect(t, again)
	taps, err := tapv2.NewServiceClient(conn2).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	_, err = taps.Recv()
	require.ErrorIs(t, err, io.EOF)
}

func TestTunTapAndErrors(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	ns := vppsimtest.NewNetns(t, nsPrefix)

	reply, err := tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, HostIfNameSet: true, HostIfName: "nsm-tun",
		HostNamespaceSet: true, HostNamespace: ns.Path(), TapFlags: tapv2.TAP_API_FLAG_TUN,
	})
	require.NoError(t, err)
	link, err := hostLink(t, ns, "nsm-tun")
	require.NoError(t, err)
	tuntap, ok := link.(*netlink.Tuntap)
	require.True(t, ok, "want a tuntap device, got %s", link.Type())
	require.Equal(t, netlink.TUNTAP_MODE_TUN, tuntap.Mode)
	require.Equal(t, "tun0", sim.State().Interfaces[uint32(reply.SwIfIndex)].Name)

	// The same host name again fails and leaves nothing behind.
	before := len(sim.State().Interfaces)
	_, err = tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, HostIfNameSet: true, HostIfName: "nsm-tun",
		HostNamespaceSet: true, HostNamespace: ns.Name,
	})
	requireAPIError(t, err, api.SYSCALL_ERROR_1)
	require.Len(t, sim.State().Interfaces, before)
}

// TestTapHostSideOptions: the host MAC, MTU and addresses tap_create_v3 asks for are what
// the kernel interface gets, and the dump reports them back.
func TestTapHostSideOptions(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	ns := vppsimtest.NewNetns(t, nsPrefix)
	hostMAC, err := ethernet_types.ParseMacAddress("02:aa:bb:cc:dd:ee")
	require.NoError(t, err)
	prefix, err := ip_types.ParseIP4Prefix("10.65.0.7/24")
	require.NoError(t, err)
	reply, err := tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: 7, HostIfNameSet: true, HostIfName: "nsm-opts", HostNamespaceSet: true, HostNamespace: ns.Name,
		HostMacAddrSet: true, HostMacAddr: hostMAC, HostMtuSet: true, HostMtuSize: 1300,
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix(prefix), Tag: "conn-7",
	})
	require.NoError(t, err)

	link, err := hostLink(t, ns, "nsm-opts")
	require.NoError(t, err)
	require.Equal(t, "02:aa:bb:cc:dd:ee", link.Attrs().HardwareAddr.String())
	require.Equal(t, 1300, link.Attrs().MTU)
	var addrs []netlink.Addr
	ns.MustDo(t, func() error {
		var err error
		addrs, err = netlink.AddrList(link, netlink.FAMILY_V4)
		return err
	})
	require.Len(t, addrs, 1)
	require.Equal(t, "10.65.0.7/24", addrs[0].IPNet.String())

	taps := recvAll(t, must(tapv2.NewServiceClient(conn).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: reply.SwIfIndex})).Recv)
	require.Len(t, taps, 1)
	require.Equal(t, uint32(7), taps[0].ID)
	require.Equal(t, "tap7", taps[0].DevName)
	require.Equal(t, "02:aa:bb:cc:dd:ee", taps[0].HostMacAddr.String())
	require.Equal(t, uint32(1300), taps[0].HostMtuSize)
	require.Equal(t, "conn-7", sim.State().Interfaces[uint32(reply.SwIfIndex)].Tag)

	_, err = tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{ID: 7, HostIfNameSet: true, HostIfName: "nsm-dup"})
	requireAPIError(t, err, api.INVALID_VALUE)
}

// TestIPv6AcrossXconnect: IPv6 frames cross like any other.
func TestIPv6AcrossXconnect(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	left, right := vppsimtest.NewNetns(t, nsPrefix), vppsimtest.NewNetns(t, nsPrefix)
	tapL, tapR := createTap(ctx, t, conn, left, "nsm-l6"), createTap(ctx, t, conn, right, "nsm-r6")
	left.AddrAdd(t, "nsm-l6", "fd00:66::1/64")
	right.AddrAdd(t, "nsm-r6", "fd00:66::2/64")
	xconnect(ctx, t, conn, tapL, tapR, true)
	xconnect(ctx, t, conn, tapR, tapL, true)
	require.NoError(t, vppsimtest.Ping(left, mustAddr(t, "fd00:66::1"), mustAddr(t, "fd00:66::2"), 5*time.Second))
}
