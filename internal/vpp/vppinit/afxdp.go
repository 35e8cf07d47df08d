package vppinit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// DefaultXDPProgram is where the image installs the uplink's XDP program (xdp/afxdp.c): the path
// the stock image uses, and the file sdk-vpp's afxdppinhole elements load the pinhole map from.
const DefaultXDPProgram = "/bin/afxdp.o"

const (
	// defaultBPFFS is where libbpf, inside VPP, pins the program's maps by name, and where the
	// afxdppinhole elements look for them.
	defaultBPFFS = "/sys/fs/bpf"
	// afXdpMaxMTU is the largest uplink MTU the stock forwarder lets AF_XDP run with: larger
	// frames do not fit one VPP buffer, and most drivers refuse XDP above it.
	afXdpMaxMTU = 3498
	// allRxQueues asks af_xdp_create_v3 for a socket on every receive queue, so that the program
	// finds VPP's socket whichever queue a tunnel packet arrives on.
	allRxQueues = 65535
)

// The maps the forwarder and the afxdppinhole elements rely on, as afxdp.c declares them.
// sdk-vpp loads the pinhole map's spec from DefaultXDPProgram and reuses the pin only when the
// two agree, entries included.
var xdpMaps = []struct {
	name                           string
	kind                           ebpf.MapType
	keySize, valueSize, maxEntries uint32
	pinnedByName                   bool
}{
	{name: "xsks_map", kind: ebpf.XSKMap, keySize: 4, valueSize: 4},
	{name: "nsm_xdp_pinhole", kind: ebpf.Hash, keySize: 2, valueSize: 2, maxEntries: 65535, pinnedByName: true},
	{name: tunnelMapName, kind: ebpf.Array, keySize: 4, valueSize: tunnelAddrSize, maxEntries: 1, pinnedByName: true},
}

const (
	tunnelMapName  = "nsm_xdp_tunnel"
	tunnelAddrSize = 4 + 16 // struct tunnel_addr: IPv4, then IPv6, network order
)

// CheckXDPProgram reads the XDP program file VPP will attach to the uplink and checks it keeps
// the contract of xdp/afxdp.c: one XDP program and the maps the forwarder and sdk-vpp fill.
// Without it VPP would load its built-in program, which takes every frame from the node.
func CheckXDPProgram(path string) error {
	if path == "" {
		return errors.New("no XDP program: VPP's built-in one would take every frame of the uplink from the node")
	}
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		return fmt.Errorf("XDP program %s: %w", path, err)
	}
	programs := 0
	for _, program := range spec.Programs {
		if program.Type == ebpf.XDP {
			programs++
		}
	}
	if programs != 1 {
		return fmt.Errorf("XDP program %s: want one XDP program, found %d", path, programs)
	}
	var problems []string
	for _, want := range xdpMaps {
		m, ok := spec.Maps[want.name]
		switch {
		case !ok:
			problems = append(problems, "no map "+want.name)
		case m.Type != want.kind || m.KeySize != want.keySize || m.ValueSize != want.valueSize ||
			(want.maxEntries != 0 && m.MaxEntries != want.maxEntries):
			problems = append(problems, fmt.Sprintf("map %s is %s key %d value %d entries %d, want %s key %d value %d entries %d",
				want.name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, want.kind, want.keySize, want.valueSize, want.maxEntries))
		case want.pinnedByName && m.Pinning != ebpf.PinByName:
			problems = append(problems, "map "+want.name+" is not pinned by name")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("XDP program %s: %s", path, strings.Join(problems, "; "))
	}
	return nil
}

// prepareAfXdp does on the node what AF_XDP needs before VPP takes the uplink, as the stock
// forwarder does: a BPF filesystem for the pinned maps, promiscuous mode and an MTU that fits
// one VPP buffer. The program is checked first, so a wrong one changes nothing.
func prepareAfXdp(ctx context.Context, handle *netlink.Handle, link netlink.Link, program, bpffs string) error {
	if err := CheckXDPProgram(program); err != nil {
		return err
	}
	if err := mountBPFFS(bpffs); err != nil {
		return err
	}
	if err := handle.SetPromiscOn(link); err != nil {
		return fmt.Errorf("promiscuous mode on %s: %w", link.Attrs().Name, err)
	}
	if mtu := link.Attrs().MTU; mtu > afXdpMaxMTU {
		log.FromContext(ctx).Warnf("AF_XDP: lowering the MTU of %s from %d to %d, the largest frame VPP takes over AF_XDP", link.Attrs().Name, mtu, afXdpMaxMTU)
		if err := handle.LinkSetMTU(link, afXdpMaxMTU); err != nil {
			return fmt.Errorf("MTU %d on %s: %w", afXdpMaxMTU, link.Attrs().Name, err)
		}
		link.Attrs().MTU = afXdpMaxMTU
	}
	return nil
}

// mountBPFFS mounts a BPF filesystem at dir unless one is there already.
func mountBPFFS(dir string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil && fs.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("BPF filesystem at %s: %w", dir, err)
	}
	if err := unix.Mount("bpffs", dir, "bpf", 0, ""); err != nil {
		return fmt.Errorf("mounting a BPF filesystem at %s: %w", dir, err)
	}
	return nil
}

// PublishTunnelIP writes the tunnel IP into the program's pinned nsm_xdp_tunnel map, in bpffs:
// until then the program hands every frame to the kernel.
func PublishTunnelIP(bpffs string, tunnelIP net.IP) error {
	m, err := ebpf.LoadPinnedMap(filepath.Join(bpffs, tunnelMapName), nil)
	if err != nil {
		return fmt.Errorf("the XDP program's map %s is not pinned in %s: %w", tunnelMapName, bpffs, err)
	}
	defer func() { _ = m.Close() }()
	var addr [tunnelAddrSize]byte
	if v4 := tunnelIP.To4(); v4 != nil {
		copy(addr[:4], v4)
	} else if v6 := tunnelIP.To16(); v6 != nil {
		copy(addr[4:], v6)
	} else {
		return fmt.Errorf("tunnel IP %v is not an IP address", tunnelIP)
	}
	if err := m.Update(uint32(0), addr, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("writing the tunnel IP into %s: %w", tunnelMapName, err)
	}
	return nil
}
