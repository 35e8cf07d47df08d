package vppsim_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	"github.com/networkservicemesh/govpp/binapi/cnat"
	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/ping"
	"github.com/networkservicemesh/govpp/binapi/vlib"
	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/networkservicemesh/govpp/binapi/wireguard"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// The tests in this file state what upstream VPP v24.10 answers and run on both backends
// (vpptest.Each): the simulator must answer as VPP does wherever a client could tell.

func callContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// withUplink starts a VPP of backend in a namespace holding a veth (up0, up, its peer up1),
// and gives VPP an af_packet interface on up0.
func withUplink(t *testing.T, backend vpptest.Backend) (*vpptest.VPP, interface_types.InterfaceIndex) {
	t.Helper()
	ns := vppsimtest.NewNetns(t, "fvp")
	vppsimtest.Veth(t, ns, "up0", "", ns, "up1", "")
	vpp := vpptest.Start(t, backend, ns)
	created, err := af_packet.NewServiceClient(vpp).AfPacketCreateV3(callContext(t), &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "up0", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	return vpp, created.SwIfIndex
}

func vxlanTunnel(isAdd bool, vni uint32) *vxlan.VxlanAddDelTunnelV3 {
	src, _ := ip_types.ParseAddress("10.9.0.1")
	dst, _ := ip_types.ParseAddress("10.9.0.2")
	return &vxlan.VxlanAddDelTunnelV3{IsAdd: isAdd, Instance: ^uint32(0), SrcAddress: src, DstAddress: dst, DecapNextIndex: ^uint32(0), Vni: vni}
}

// What VPP answers to the calls the forwarder and sdk-vpp make when the thing they name is
// already there or already gone: cleanup paths depend on these.
func TestRetvalsAsVPP(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vpp, uplink := withUplink(t, backend)
		ctx := callContext(t)
		_, err := vxlan.NewServiceClient(vpp).VxlanAddDelTunnelV3(ctx, vxlanTunnel(true, 42))
		require.NoError(t, err)
		_, err = ikev2.NewServiceClient(vpp).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: "p0", IsAdd: true})
		require.NoError(t, err)
		missingRoute, _ := ip_types.ParsePrefix("10.77.0.0/24")
		for _, c := range []struct {
			name string
			call func() error
			want api.VPPApiError // 0: success
		}{
			{"a second tunnel with the same endpoints and VNI", func() error {
				_, err := vxlan.NewServiceClient(vpp).VxlanAddDelTunnelV3(ctx, vxlanTunnel(true, 42))
				return err
			}, api.TUNNEL_EXIST},
			{"deleting a tunnel that does not exist", func() error {
				_, err := vxlan.NewServiceClient(vpp).VxlanAddDelTunnelV3(ctx, vxlanTunnel(false, 43))
				return err
			}, api.NO_SUCH_ENTRY},
			{"a second af_packet on the same host interface", func() error {
				_, err := af_packet.NewServiceClient(vpp).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
					Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "up0", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
				})
				return err
			}, api.IF_ALREADY_EXISTS},
			{"deleting an af_packet that does not exist", func() error {
				_, err := af_packet.NewServiceClient(vpp).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "nosuch"})
				return err
			}, api.SYSCALL_ERROR_1},
			{"deleting a route that does not exist", func() error {
				_, err := ip.NewServiceClient(vpp).IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: false, Route: ip.IPRoute{Prefix: missingRoute}})
				return err
			}, 0},
			{"deleting an l3xc that does not exist", func() error {
				_, err := l3xc.NewServiceClient(vpp).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: uplink})
				return err
			}, api.INVALID_VALUE},
			{"a route into a table that does not exist", func() error {
				_, err := ip.NewServiceClient(vpp).IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{TableID: 77, Prefix: missingRoute}})
				return err
			}, api.NO_SUCH_FIB},
			{"flags of an interface that does not exist", func() error {
				_, err := interfaces.NewServiceClient(vpp).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: 77, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
				return err
			}, api.INVALID_SW_IF_INDEX},
			{"removing the tag of an untagged interface", func() error {
				_, err := interfaces.NewServiceClient(vpp).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{SwIfIndex: uplink})
				return err
			}, 0},
			{"removing a wireguard peer that does not exist", func() error {
				_, err := wireguard.NewServiceClient(vpp).WireguardPeerRemove(ctx, &wireguard.WireguardPeerRemove{PeerIndex: 9})
				return err
			}, api.NO_SUCH_ENTRY},
			{"deleting a wireguard interface that does not exist", func() error {
				_, err := wireguard.NewServiceClient(vpp).WireguardInterfaceDelete(ctx, &wireguard.WireguardInterfaceDelete{SwIfIndex: 77})
				return err
			}, api.INVALID_SW_IF_INDEX},
			{"deleting an ipsec interface that does not exist", func() error {
				_, err := ipsec.NewServiceClient(vpp).IpsecItfDelete(ctx, &ipsec.IpsecItfDelete{SwIfIndex: 77})
				return err
			}, api.INVALID_SW_IF_INDEX},
			{"deleting a memif that does not exist", func() error {
				_, err := memif.NewServiceClient(vpp).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: 77})
				return err
			}, api.INVALID_SW_IF_INDEX},
			{"deleting an IKEv2 profile that does not exist", func() error {
				_, err := ikev2.NewServiceClient(vpp).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: "p1"})
				return err
			}, api.UNSPECIFIED},
			{"adding an IKEv2 profile that exists", func() error {
				_, err := ikev2.NewServiceClient(vpp).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: "p0", IsAdd: true})
				return err
			}, api.UNSPECIFIED},
			// Only once the ikev2 plugin has a profile: before, VPP v24.10 does not answer this
			// call at all (sdk-vpp never makes it on a profile it did not create).
			{"setting an IKEv2 profile that does not exist", func() error {
				_, err := ikev2.NewServiceClient(vpp).Ikev2ProfileSetUDPEncap(ctx, &ikev2.Ikev2ProfileSetUDPEncap{Name: "p1"})
				return err
			}, api.UNSPECIFIED},
			{"promiscuous mode on af_packet", func() error {
				_, err := interfaces.NewServiceClient(vpp).SwInterfaceSetPromisc(ctx, &interfaces.SwInterfaceSetPromisc{SwIfIndex: uplink, PromiscOn: true})
				return err
			}, api.UNSPECIFIED},
			{"promiscuous mode on an interface that does not exist", func() error {
				_, err := interfaces.NewServiceClient(vpp).SwInterfaceSetPromisc(ctx, &interfaces.SwInterfaceSetPromisc{SwIfIndex: 77, PromiscOn: true})
				return err
			}, api.INVALID_SW_IF_INDEX},
		} {
			err := c.call()
			if c.want == 0 {
				require.NoError(t, err, c.name)
				continue
			}
			require.ErrorIs(t, err, c.want, c.name)
		}
	})
}

// A VPP built without the af_xdp and cnat plugins and without NSM's patches does not know their
// messages: a client learns it before anything is sent (docs/vpp.md).
func TestMessagesOfUnbuiltPluginsAndNSMPatchesAreUnknown(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vpp := vpptest.Start(t, backend, nil)
		ctx := callContext(t)
		for _, c := range []struct {
			request, reply api.Message
		}{
			{&af_xdp.AfXdpCreateV3{HostIf: "up0"}, &af_xdp.AfXdpCreateV3Reply{}},
			{&cnat.CnatSessionPurge{}, &cnat.CnatSessionPurgeReply{}},
			{&interfaces.GetBuffersStats{}, &interfaces.GetBuffersStatsReply{}},
			{&ping.WantPingFinishedEvents{}, &ping.WantPingFinishedEventsReply{}},
		} {
			var unknown *adapter.UnknownMsgError
			require.ErrorAs(t, vpp.Invoke(ctx, c.request, c.reply), &unknown, c.request.GetMessageName())
		}
		version, err := vpe.NewServiceClient(vpp).ShowVersion(ctx, &vpe.ShowVersion{})
		require.NoError(t, err, "the connection still works")
		require.Contains(t, version.Version, "24.10")
	})
}

// newInterface is how one kind of interface comes to be, and what sw_interface_dump then says
// of it in VPP v24.10.
type newInterface struct {
	kind   string
	create func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex
	want   vpptest.Interface
	// randomMAC: VPP made up the MAC (02:fe:...); the test compares the rest.
	randomMAC bool
}

var newInterfaces = []newInterface{
	{kind: "af_packet on a host link that is up", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		created, err := af_packet.NewServiceClient(vpp).AfPacketCreateV3(callContext(t), &af_packet.AfPacketCreateV3{
			Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "up0", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
		})
		require.NoError(t, err)
		return created.SwIfIndex
	}, randomMAC: true, want: vpptest.Interface{
		Name: "host-up0", DevType: "af-packet", Type: interface_types.IF_API_TYPE_HARDWARE, LinkUp: true, MTU: [4]uint32{9000, 0, 0, 0}, LinkMTU: 9000,
	}},
	{kind: "vxlan tunnel", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		created, err := vxlan.NewServiceClient(vpp).VxlanAddDelTunnelV3(callContext(t), vxlanTunnel(true, 42))
		require.NoError(t, err)
		return created.SwIfIndex
	}, randomMAC: true, want: vpptest.Interface{
		Name: "vxlan_tunnel0", DevType: "VXLAN", Type: interface_types.IF_API_TYPE_HARDWARE, AdminUp: true, LinkUp: true, MTU: [4]uint32{9000, 0, 0, 0}, LinkMTU: 9000,
	}},
	{kind: "memif in IP mode", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		socket, err := memif.NewServiceClient(vpp).MemifSocketFilenameAddDelV2(callContext(t), &memif.MemifSocketFilenameAddDelV2{
			IsAdd: true, SocketID: ^uint32(0), SocketFilename: "abstract:fvp-memif",
		})
		require.NoError(t, err)
		require.Equal(t, uint32(1013904223), socket.SocketID, "VPP's first free socket ID")
		created, err := memif.NewServiceClient(vpp).MemifCreate(callContext(t), &memif.MemifCreate{
			Role: memif.MEMIF_ROLE_API_MASTER, Mode: memif.MEMIF_MODE_API_IP, SocketID: socket.SocketID,
		})
		require.NoError(t, err)
		return created.SwIfIndex
	}, want: vpptest.Interface{
		Name: "memif1013904223/0", DevType: "memif", Type: interface_types.IF_API_TYPE_HARDWARE, MAC: "00:00:00:00:00:00",
	}},
	{kind: "wireguard", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		src, _ := ip_types.ParseAddress("10.9.0.1")
		created, err := wireguard.NewServiceClient(vpp).WireguardInterfaceCreate(callContext(t), &wireguard.WireguardInterfaceCreate{
			GenerateKey: true, Interface: wireguard.WireguardInterface{UserInstance: ^uint32(0), Port: 51820, SrcIP: src},
		})
		require.NoError(t, err)
		return created.SwIfIndex
	}, want: vpptest.Interface{
		Name: "wg0", DevType: "Wireguard Tunnel", Type: interface_types.IF_API_TYPE_HARDWARE, MAC: "00:00:00:00:00:00",
	}},
	{kind: "ipsec", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		created, err := ipsec.NewServiceClient(vpp).IpsecItfCreate(callContext(t), &ipsec.IpsecItfCreate{Itf: ipsec.IpsecItf{UserInstance: ^uint32(0)}})
		require.NoError(t, err)
		return created.SwIfIndex
	}, want: vpptest.Interface{
		Name: "ipsec0", DevType: "IPSEC Tunnel", Type: interface_types.IF_API_TYPE_HARDWARE, MAC: "00:00:00:00:00:00", MTU: [4]uint32{9000, 0, 0, 0},
	}},
	{kind: "loopback", create: func(t *testing.T, vpp *vpptest.VPP) interface_types.InterfaceIndex {
		created, err := interfaces.NewServiceClient(vpp).CreateLoopback(callContext(t), &interfaces.CreateLoopback{})
		require.NoError(t, err)
		return created.SwIfIndex
	}, want: vpptest.Interface{
		Name: "loop0", DevType: "Loopback", Type: interface_types.IF_API_TYPE_HARDWARE, MAC: "de:ad:00:00:00:00", MTU: [4]uint32{9000, 0, 0, 0}, LinkMTU: 9000,
	}},
}

func TestNewInterfacesAsVPPReportsThem(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		for _, c := range newInterfaces {
			t.Run(c.kind, func(t *testing.T) {
				ns := vppsimtest.NewNetns(t, "fvp")
				vppsimtest.Veth(t, ns, "up0", "", ns, "up1", "")
				vpp := vpptest.Start(t, backend, ns)
				index := c.create(t, vpp)
				got := vpp.Interfaces(t)[index]
				want := c.want
				want.SwIfIndex = uint32(index)
				if c.randomMAC {
					mac, err := ethernet_types.ParseMacAddress(got.MAC)
					require.NoError(t, err)
					require.Equal(t, []byte{0x02, 0xfe}, mac[:2], "VPP's random MACs are locally administered, 02:fe:...")
					want.MAC = got.MAC
				}
				require.Equal(t, want, got)
			})
		}
	})
}

// VPP hands out memif socket IDs from its own random sequence (the same in every run) and names
// loopbacks' MACs after their instance, reusing a freed instance.
func TestMemifSocketIDsAndLoopbackMACsAsVPPHandsThemOut(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vpp := vpptest.Start(t, backend, nil)
		ctx := callContext(t)
		var ids []uint32
		for _, name := range []string{"abstract:fvp-a", "abstract:fvp-b", "abstract:fvp-c"} {
			socket, err := memif.NewServiceClient(vpp).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{
				IsAdd: true, SocketID: ^uint32(0), SocketFilename: name,
			})
			require.NoError(t, err)
			ids = append(ids, socket.SocketID)
		}
		require.Equal(t, []uint32{1013904223, 1196435762, 3519870697}, ids)

		var macs []string
		loopback := func() interface_types.InterfaceIndex {
			created, err := interfaces.NewServiceClient(vpp).CreateLoopback(ctx, &interfaces.CreateLoopback{})
			require.NoError(t, err)
			mac, err := interfaces.NewServiceClient(vpp).SwInterfaceGetMacAddress(ctx, &interfaces.SwInterfaceGetMacAddress{SwIfIndex: created.SwIfIndex})
			require.NoError(t, err)
			macs = append(macs, mac.MacAddress.String())
			return created.SwIfIndex
		}
		first := loopback()
		loopback()
		_, err := interfaces.NewServiceClient(vpp).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: first})
		require.NoError(t, err)
		loopback()
		require.Equal(t, []string{"de:ad:00:00:00:00", "de:ad:00:00:00:01", "de:ad:00:00:00:00"}, macs)
		require.Equal(t, []string{"local0", "loop0", "loop1"}, vpp.InterfaceNames(t), "instance 0 is free again")
	})
}

// VPP v24.10 keeps a deleted interface's static neighbours in its table (and crashes at the next
// deletion of a neighbour with the same IP elsewhere: internal/networkservice/restore removes them first).
func TestDeletedInterfaceKeepsItsStaticNeighbours(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vpp, uplink := withUplink(t, backend)
		ctx := callContext(t)
		address, _ := ip_types.ParseAddress("172.16.0.2")
		mac, _ := ethernet_types.ParseMacAddress("02:00:00:00:00:01")
		_, err := ip_neighbor.NewServiceClient(vpp).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: uplink, Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: address,
		}})
		require.NoError(t, err)

		_, err = af_packet.NewServiceClient(vpp).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "up0"})
		require.NoError(t, err)

		require.Equal(t, []string{"local0"}, vpp.InterfaceNames(t))
		require.Equal(t, []vpptest.Neighbor{{SwIfIndex: uint32(uplink), IP: "172.16.0.2", MAC: "02:00:00:00:00:01", Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC}},
			vpp.Neighbors(t, ^uint32(0)))
	})
}

// VPP's CLI through the API (cli_inband): `show clock` as the forwarder's start-up check reads it,
// and a command VPP does not know, which VPP answers with UNSPECIFIED and says where it stopped.
func TestCLIAnswersAsVPP(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vpp := vpptest.Start(t, backend, nil)
		ctx := callContext(t)
		clock := &vlib.CliInbandReply{}
		require.NoError(t, vpp.Invoke(ctx, &vlib.CliInband{Cmd: "show clock"}, clock))
		require.Zero(t, clock.Retval)
		answer := showClockAnswer.FindStringSubmatch(clock.Reply)
		require.NotNil(t, answer, "show clock answered %q", clock.Reply)
		date, err := time.Parse("Mon, 02 Jan 2006 15:04:05", answer[1])
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().UTC(), date, 2*time.Second, "the date is the kernel's, in GMT")
		require.NoError(t, vppclock.Check(ctx, vpp), "VPP's clock keeps the kernel's pace")

		for _, c := range []struct{ command, reply string }{
			{"show nonsense", "show: unknown input `nonsense'\n"},
			{"nonsense", "unknown input `nonsense'\n"},
			{"  nonsense  ", "unknown input `  nonsense'\n"},
			{" show \t nonsense ", "show: unknown input `\\t nonsense'\n"},
			{"show nonsense-that-no-vpp-has-ever-had at all", "show: unknown input `nonsense-that-no-vpp-has-ever-...'\n"},
		} {
			unknown := &vlib.CliInbandReply{}
			require.NoError(t, vpp.Invoke(ctx, &vlib.CliInband{Cmd: c.command}, unknown))
			require.Equal(t, int32(api.UNSPECIFIED), unknown.Retval, c.command)
			require.Equal(t, c.reply, unknown.Reply, c.command)
		}
	})
}

// showClockAnswer is VPP v24.10's answer to `show clock` without workers: seconds since start-up
// without a zero before the point below one second, the date; the main thread's line.
var showClockAnswer = regexp.MustCompile(`^Time now (?:[1-9][0-9]*)?\.[0-9]{6}, ([A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8}) GMT
Time last barrier release 0\.000000000
0: Time now (?:[1-9][0-9]*)?\.[0-9]{6}
Thread 0 offset 0\.000000000 error 0\.000000000
$`)
