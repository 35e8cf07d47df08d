package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// HostLink is what the simulator learns about a host interface it binds to.
type HostLink struct {
	MAC net.HardwareAddr
}

// CreateAfPacket binds a raw socket to hostIfName in the simulator's namespace and attaches
// it to swIfIndex. It returns the host interface's MAC and MTU, which VPP adopts.
func (p *Plane) CreateAfPacket(swIfIndex uint32, hostIfName string) (HostLink, error) {
	var file *os.File
	var host HostLink
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
		// The kernel strips VLAN tags into packet metadata; auxdata gives them back.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("PACKET_AUXDATA: %w", err)
		}
		file = os.NewFile(uintptr(fd), "af_packet:"+hostIfName)
		host = HostLink{MAC: link.Attrs().HardwareAddr}
		return nil
	})
	if err != nil {
		return HostLink{}, err
	}
	p.addPort(swIfIndex, &afPacketPort{filePort: filePort{file: file, carries: L2}})
	return host, nil
}

// SetHostLinkUp sets the admin state of the host interface hostIfName, as VPP's af_packet
// device does when its interface is set up or down.
func (p *Plane) SetHostLinkUp(hostIfName string, up bool) error {
	return inNetns(p.ownNetns, func() error {
		link, err := netlink.LinkByName(hostIfName)
		if err != nil {
			return err
		}
		if up {
			return netlink.LinkSetUp(link)
		}
		return netlink.LinkSetDown(link)
	})
}

// afPacketPort reads like VPP's af_packet input: a VLAN tag the kernel moved into
// metadata is put back into the frame.
type afPacketPort struct {
	filePort
}

var auxdataSpace = unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{})))

func (a *afPacketPort) read(buf []byte) (int, error) {
	raw, err := a.file.SyscallConn()
	if err != nil {
		return 0, err
	}
	// Leave room in front of the frame for a tag to be put back.
	frame := buf[4:]
	oob := make([]byte, auxdataSpace)
	var n, oobn int
	var recvErr error
	err = raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, recvErr = unix.Recvmsg(int(fd), frame, oob, 0)
		return recvErr != unix.EAGAIN
	})
	if err != nil {
		return 0, err
	}
	if recvErr != nil {
		return 0, recvErr
	}
	tci, tagged := vlanFromAuxdata(oob[:oobn])
	if !tagged || n < 12 {
		copy(buf, frame[:n])
		return n, nil
	}
	copy(buf, frame[:12])
	binary.BigEndian.PutUint16(buf[12:14], etherTypeVlan)
	binary.BigEndian.PutUint16(buf[14:16], tci)
	// frame[12:n] already sits at buf[16:n+4].
	return n + 4, nil
}

func vlanFromAuxdata(oob []byte) (uint16, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA ||
			len(m.Data) < int(unsafe.Sizeof(unix.TpacketAuxdata{})) {
			continue
		}
		aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
		if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 {
			return aux.Vlan_tci, true
		}
	}
	return 0, false
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
