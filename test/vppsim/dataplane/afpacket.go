package dataplane

import (
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// CreateAfPacket binds a raw socket to hostIfName in the simulator's namespace and attaches
// it to swIfIndex. It returns the host interface's MAC.
func (p *Plane) CreateAfPacket(swIfIndex uint32, hostIfName string) (net.HardwareAddr, error) {
	var file *os.File
	var mac net.HardwareAddr
	err := inNetns(p.ownNetns, func() error {
		link, err := netlink.LinkByName(hostIfName)
		if err != nil {
			return fmt.Errorf("host interface %s: %w", hostIfName, err)
		}
		proto := htons(unix.ETH_P_ALL)
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(proto))
		if err != nil {
			return fmt.Errorf("af_packet socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: link.Attrs().Index}); err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("binding af_packet socket to %s: %w", hostIfName, err)
		}
		// Our own transmissions must not come back as receptions.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
		}
		file = os.NewFile(uintptr(fd), "af_packet:"+hostIfName)
		mac = link.Attrs().HardwareAddr
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.addPort(swIfIndex, &filePort{file: file, carries: L2})
	return mac, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
