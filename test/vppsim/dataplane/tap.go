package dataplane

import (
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TapSpec is what tap_create_v3 asks of the kernel side.
type TapSpec struct {
	HostIfName string
	// Namespace is a netns name or path; empty means the simulator's own namespace.
	Namespace string
	Tun       bool
	HostMAC   net.HardwareAddr
	HostMTU   int
	HostIP4   *net.IPNet
	HostIP6   *net.IPNet
}

// TapResult is what the kernel assigned.
type TapResult struct {
	HostMAC net.HardwareAddr
	HostMTU int
}

// CreateTap creates the host interface and attaches it to swIfIndex as a port. The
// interface is not persistent: it disappears when the simulator closes it or dies.
func (p *Plane) CreateTap(swIfIndex uint32, spec TapSpec) (TapResult, error) {
	var file *os.File
	var result TapResult
	nsPath := p.ownNetns
	if spec.Namespace != "" {
		nsPath = NamespacePath(spec.Namespace)
	}
	err := inNetns(nsPath, func() error {
		if _, err := netlink.LinkByName(spec.HostIfName); err == nil {
			return fmt.Errorf("host interface %s already exists in %q", spec.HostIfName, nsPath)
		}
		f, err := openTun(spec.HostIfName, spec.Tun)
		if err != nil {
			return err
		}
		link, err := configureHostSide(spec)
		if err != nil {
			_ = f.Close()
			return err
		}
		file = f
		result = TapResult{HostMAC: link.Attrs().HardwareAddr, HostMTU: link.Attrs().MTU}
		return nil
	})
	if err != nil {
		return TapResult{}, err
	}
	layer := L2
	if spec.Tun {
		layer = L3
	}
	p.addPort(swIfIndex, &filePort{file: file, carries: layer})
	return result, nil
}

func openTun(name string, tun bool) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("host interface name %q: %w", name, err)
	}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if tun {
		flags = unix.IFF_TUN | unix.IFF_NO_PI
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tap:"+name), nil
}

// configureHostSide applies the host-side settings VPP applies, and brings the link up as
// VPP does.
func configureHostSide(spec TapSpec) (netlink.Link, error) {
	link, err := netlink.LinkByName(spec.HostIfName)
	if err != nil {
		return nil, err
	}
	if len(spec.HostMAC) != 0 && !spec.Tun {
		if err := netlink.LinkSetHardwareAddr(link, spec.HostMAC); err != nil {
			return nil, fmt.Errorf("setting host MAC %s: %w", spec.HostMAC, err)
		}
	}
	if spec.HostMTU != 0 {
		if err := netlink.LinkSetMTU(link, spec.HostMTU); err != nil {
			return nil, fmt.Errorf("setting host MTU %d: %w", spec.HostMTU, err)
		}
	}
	for _, prefix := range []*net.IPNet{spec.HostIP4, spec.HostIP6} {
		if prefix == nil {
			continue
		}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: prefix}); err != nil {
			return nil, fmt.Errorf("adding host address %s: %w", prefix, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, err
	}
	return netlink.LinkByName(spec.HostIfName)
}
