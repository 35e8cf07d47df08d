package vppinit_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/afxdppinhole"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/pinhole"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// buildScript is the script the image's build stage compiles the program with.
var buildScript = filepath.Join("..", "..", "..", "scripts", "build-xdp.sh")

var (
	buildOnce   sync.Once
	builtObject string
	buildErr    error
)

// xdpProgram compiles xdp/afxdp.c with scripts/build-xdp.sh, the script the image's build stage
// runs, once per test binary.
func xdpProgram(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang is not on PATH (scripts/install-tools.sh installs it): cannot build the XDP program")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fwd-xdp-")
		if err != nil {
			buildErr = err
			return
		}
		builtObject = filepath.Join(dir, "afxdp.o")
		out, err := exec.Command(buildScript, builtObject).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("scripts/build-xdp.sh: %w: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtObject
}

func TestMain(m *testing.M) {
	code := leaktest.Run(m)
	if builtObject != "" {
		_ = os.RemoveAll(filepath.Dir(builtObject))
	}
	os.Exit(code)
}

// newBPFFS mounts a BPF filesystem of the test's own (each mount is a new instance), as VPP's
// loader finds one at /sys/fs/bpf, and removes it when the test ends.
func newBPFFS(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, unix.Mount("bpffs", dir, "bpf", 0, ""))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestTheShippedXDPProgramKeepsTheContract(t *testing.T) {
	require.NoError(t, vppinit.CheckXDPProgram(xdpProgram(t)))
}

func TestCheckXDPProgramRefusesWhatWouldTakeTheNodesTraffic(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "not-elf.o")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o600))

	require.ErrorContains(t, vppinit.CheckXDPProgram(""), "every frame")
	require.ErrorContains(t, vppinit.CheckXDPProgram(filepath.Join(dir, "absent.o")), "no such file")
	require.ErrorContains(t, vppinit.CheckXDPProgram(notELF), notELF)

	// A program without the maps the forwarder and sdk-vpp fill: built from a copy of ours with
	// the tunnel map renamed.
	source, err := os.ReadFile(filepath.Join("xdp", "afxdp.c"))
	require.NoError(t, err)
	renamed := bytes.ReplaceAll(source, []byte("nsm_xdp_tunnel"), []byte("other_tunnel"))
	require.NotEqual(t, source, renamed)
	xdpProgram(t) // skips without clang
	src, obj := filepath.Join(dir, "other.c"), filepath.Join(dir, "other.o")
	require.NoError(t, os.WriteFile(src, renamed, 0o600))
	out, err := exec.Command(buildScript, obj, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.ErrorContains(t, vppinit.CheckXDPProgram(obj), "no map nsm_xdp_tunnel")
}

// uplinkUnderXDP is the node's uplink with the shipped program attached as VPP attaches it, and
// an AF_XDP socket where VPP's would be: frames redirected to VPP land in vpp, frames passed to
// the kernel show on kernel; wire sends frames from the other end of the link.
type uplinkUnderXDP struct {
	bpffs, program string
	mac, wireMAC   net.HardwareAddr
	vpp            *xsk
	kernel, wire   *packetTap
}

const (
	tunnelIPv4 = "192.0.2.10"
	tunnelIPv6 = "2001:db8::10"
	peerIPv4   = "192.0.2.20"
	peerIPv6   = "2001:db8::20"
)

func newUplinkUnderXDP(t *testing.T) *uplinkUnderXDP {
	program := xdpProgram(t)
	u := &uplinkUnderXDP{bpffs: newBPFFS(t), program: program}
	ns, handle := newTestNetns(t)
	uplink := addVeth(t, handle, "fcx-up0", "fcx-wire0")
	wire, err := handle.LinkByName("fcx-wire0")
	require.NoError(t, err)
	u.mac, u.wireMAC = uplink.Attrs().HardwareAddr, wire.Attrs().HardwareAddr

	// VPP's loader: the program's maps pinned by name in the BPF filesystem, the program on the link.
	spec, err := ebpf.LoadCollectionSpec(program)
	require.NoError(t, err)
	collection, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: u.bpffs}})
	require.NoError(t, err)
	t.Cleanup(collection.Close)
	require.Len(t, collection.Programs, 1)
	var program0 *ebpf.Program
	for _, p := range collection.Programs {
		program0 = p
	}
	ns.MustDo(t, func() error {
		attached, err := link.AttachXDP(link.XDPOptions{Program: program0, Interface: uplink.Attrs().Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attaching the XDP program to a veth (native mode): %w", err)
		}
		t.Cleanup(func() { _ = attached.Close() })
		u.vpp = newXSK(t, uplink.Attrs().Index)
		u.kernel = newPacketTap(t, uplink.Attrs().Index)
		u.wire = newPacketTap(t, wire.Attrs().Index)
		return nil
	})
	require.NoError(t, collection.Maps["xsks_map"].Update(uint32(0), uint32(u.vpp.fd), ebpf.UpdateAny))

	return u
}

// openPinhole opens the pinhole as the forwarder's chain does: sdk-vpp's afxdppinhole element,
// reading this very program file and the pinned map, for a connection's mechanism port and an
// extra port (0: none).
func (u *uplinkUnderXDP) openPinhole(t *testing.T, port, extraPort uint16) {
	server := chain.NewNetworkServiceServer(
		metadata.NewServer(),
		afxdppinhole.NewServer(afxdppinhole.WithElfPath(u.program), afxdppinhole.WithBpfFsDir(u.bpffs)),
		&extraPortServer{port: extraPort},
	)
	_, err := server.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id: fmt.Sprintf("conn-%d", port),
		Mechanism: &networkservice.Mechanism{
			Cls: "REMOTE", Type: "VXLAN", Parameters: map[string]string{common.DstPort: fmt.Sprint(port)},
		},
	}})
	require.NoError(t, err)
}

// extraPortServer stores an extra pinhole port as sdk-vpp's ipsec mechanism stores IKE's.
type extraPortServer struct{ port uint16 }

func (s *extraPortServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if s.port != 0 {
		pinhole.StoreExtra(ctx, false, pinhole.NewIPPort(tunnelIPv4, s.port))
	}
	return next.Server(ctx).Request(ctx, request)
}

func (s *extraPortServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// frameCase is one frame sent to the uplink and who must receive it.
type frameCase struct {
	name   string
	build  func(marker []byte) []byte // an Ethernet payload with its EtherType, see send
	toVPP  bool
	marker []byte
}

// deliver sends each case's frame from the wire and requires it at VPP or at the kernel, and
// never at both.
func (u *uplinkUnderXDP) deliver(t *testing.T, cases []frameCase) {
	t.Helper()
	u.vpp.receive()
	u.kernel.received()
	for i := range cases {
		cases[i].marker = []byte(fmt.Sprintf("fwd-xdp-case-%02d!", i))
		require.NoError(t, u.wire.send(cases[i].build(cases[i].marker)), cases[i].name)
	}
	deadline := time.Now().Add(5 * time.Second)
	atVPP, atKernel := map[int]bool{}, map[int]bool{}
	for {
		settle()
		record(cases, u.vpp.receive(), atVPP)
		record(cases, u.kernel.received(), atKernel)
		if len(atVPP)+len(atKernel) >= len(cases) || time.Now().After(deadline) {
			break
		}
	}
	for i, c := range cases {
		switch {
		case atVPP[i] && atKernel[i]:
			t.Errorf("%s: reached both VPP and the kernel", c.name)
		case c.toVPP && !atVPP[i]:
			t.Errorf("%s: must reach VPP; reached the kernel: %v", c.name, atKernel[i])
		case !c.toVPP && !atKernel[i]:
			t.Errorf("%s: must reach the kernel; reached VPP: %v", c.name, atVPP[i])
		}
	}
}

func record(cases []frameCase, frames [][]byte, seen map[int]bool) {
	for _, frame := range frames {
		for i, c := range cases {
			if bytes.Contains(frame, c.marker) {
				seen[i] = true
			}
		}
	}
}

// udpTo is a UDP datagram over IPv4 from the peer node to dst:port.
func (u *uplinkUnderXDP) udpTo(dst string, port uint16) func([]byte) []byte {
	return func(marker []byte) []byte {
		return ethernet(u.mac, u.wireMAC, etherTypeIPv4, ipv4(peerIPv4, dst, protoUDP, udp(40000, port, marker), ipv4Options{}))
	}
}

func (u *uplinkUnderXDP) udp6To(dst string, port uint16) func([]byte) []byte {
	return func(marker []byte) []byte {
		return ethernet(u.mac, u.wireMAC, etherTypeIPv6, ipv6(peerIPv6, dst, protoUDP, udp(40000, port, marker)))
	}
}

const (
	vxlanPort     = 4789
	wireguardPort = 51820
	ikePort       = 500
)

// TestXDPProgramHandsVPPOnlyTunnelTraffic attaches the shipped program to a veth as VPP attaches
// it to the uplink, with an AF_XDP socket in VPP's place, and checks frame by frame what VPP gets
// and what the node keeps.
func TestXDPProgramHandsVPPOnlyTunnelTraffic(t *testing.T) {
	u := newUplinkUnderXDP(t)
	broadcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

	// Before the forwarder has said which address is the tunnel's, everything is the node's.
	u.openPinhole(t, vxlanPort, 0)
	u.deliver(t, []frameCase{{name: "VXLAN before the tunnel IP is known", build: u.udpTo(tunnelIPv4, vxlanPort)}})

	require.NoError(t, vppinit.PublishTunnelIP(u.bpffs, net.ParseIP(tunnelIPv4)))
	u.deliver(t, []frameCase{
		{name: "VXLAN to the tunnel IP", build: u.udpTo(tunnelIPv4, vxlanPort), toVPP: true},
		{name: "WireGuard port not opened by any connection yet", build: u.udpTo(tunnelIPv4, wireguardPort)},
	})

	u.openPinhole(t, wireguardPort, ikePort)
	u.deliver(t, []frameCase{
		{name: "VXLAN to the tunnel IP", build: u.udpTo(tunnelIPv4, vxlanPort), toVPP: true},
		{name: "WireGuard to the tunnel IP", build: u.udpTo(tunnelIPv4, wireguardPort), toVPP: true},
		{name: "IKE to the tunnel IP (an extra pinhole port)", build: u.udpTo(tunnelIPv4, ikePort), toVPP: true},
		{name: "VXLAN with IPv4 options", toVPP: true, build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeIPv4, ipv4(peerIPv4, tunnelIPv4, protoUDP, udp(40000, vxlanPort, marker),
				ipv4Options{options: []byte{1, 1, 1, 0}}))
		}},
		{name: "DNS to the tunnel IP", build: u.udpTo(tunnelIPv4, 53)},
		{name: "VXLAN port to another address of the node", build: u.udpTo("192.0.2.99", vxlanPort)},
		{name: "TCP to the tunnel IP on the VXLAN port", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeIPv4, ipv4(peerIPv4, tunnelIPv4, protoTCP, append(make([]byte, 20), marker...), ipv4Options{}))
		}},
		{name: "first fragment of a VXLAN datagram", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeIPv4, ipv4(peerIPv4, tunnelIPv4, protoUDP, udp(40000, vxlanPort, marker), ipv4Options{fragment: 0x2000}))
		}},
		{name: "later fragment whose bytes look like the VXLAN port", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeIPv4, ipv4(peerIPv4, tunnelIPv4, protoUDP, udp(40000, vxlanPort, marker), ipv4Options{fragment: 0x0010}))
		}},
		{name: "ARP request for the tunnel IP", build: func(marker []byte) []byte {
			return ethernet(broadcast, u.wireMAC, etherTypeARP, arp(1, u.wireMAC, peerIPv4, net.HardwareAddr{0, 0, 0, 0, 0, 0}, tunnelIPv4, marker))
		}},
		{name: "ARP reply to the tunnel IP", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeARP, arp(2, u.wireMAC, peerIPv4, u.mac, tunnelIPv4, marker))
		}},
		{name: "VLAN-tagged VXLAN", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeVLAN, vlan(100, etherTypeIPv4, ipv4(peerIPv4, tunnelIPv4, protoUDP, udp(40000, vxlanPort, marker), ipv4Options{})))
		}},
		{name: "IPv4 header cut short", build: func(marker []byte) []byte {
			return ethernet(u.mac, u.wireMAC, etherTypeIPv4, append([]byte{0x45, 0, 0, 20, 0, 0}, marker...))
		}},
		{name: "IPv6 VXLAN while the tunnel IP is IPv4", build: u.udp6To(tunnelIPv6, vxlanPort)},
	})

	require.NoError(t, vppinit.PublishTunnelIP(u.bpffs, net.ParseIP(tunnelIPv6)))
	u.deliver(t, []frameCase{
		{name: "IPv6 VXLAN to the tunnel IP", build: u.udp6To(tunnelIPv6, vxlanPort), toVPP: true},
		{name: "IPv6 DNS to the tunnel IP", build: u.udp6To(tunnelIPv6, 53)},
		{name: "IPv6 VXLAN port to another address", build: u.udp6To("2001:db8::99", vxlanPort)},
		{name: "IPv6 neighbour solicitation", build: func(marker []byte) []byte {
			return ethernet(net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x10}, u.wireMAC, etherTypeIPv6,
				ipv6(peerIPv6, "ff02::1:ff00:10", protoICMPv6, append([]byte{135, 0, 0, 0, 0, 0, 0, 0}, marker...)))
		}},
		{name: "IPv4 VXLAN once the tunnel IP is IPv6", build: u.udpTo(tunnelIPv4, vxlanPort)},
	})
}

// TestPublishTunnelIPNeedsThePinnedMap: without VPP having loaded the program (nothing pinned),
// the forwarder says so instead of running with a program that redirects nothing.
func TestPublishTunnelIPNeedsThePinnedMap(t *testing.T) {
	err := vppinit.PublishTunnelIP(newBPFFS(t), net.ParseIP(tunnelIPv4))
	require.ErrorContains(t, err, "nsm_xdp_tunnel is not pinned")
}

// The uplink of the AF_XDP tests: a link whose MTU is above what AF_XDP takes; a VPP of backend
// runs beside it.
func jumboNode(t *testing.T, backend vpptest.Backend) (*netlink.Handle, *vpptest.VPP) {
	ns, handle := newTestNetns(t)
	uplink := addVeth(t, handle, "fcs-up0", "fcs-upp0")
	require.NoError(t, handle.LinkSetMTU(uplink, 9000))
	require.NoError(t, handle.AddrAdd(uplink, &netlink.Addr{IPNet: mustCIDR(t, "192.0.2.10/24")}))
	require.NoError(t, handle.RouteAdd(&netlink.Route{LinkIndex: uplink.Attrs().Index, Gw: net.ParseIP("192.0.2.1")}))
	return handle, startVPP(t, backend, ns)
}
