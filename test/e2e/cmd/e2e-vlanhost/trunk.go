package main

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	// tpStatusVlanValid says a received frame's VLAN tag is in its auxiliary data (the kernel
	// takes the tag off the frame on receive).
	tpStatusVlanValid = 0x10
	// auxdataVlanTCI is where struct tpacket_auxdata holds the tag's TCI.
	auxdataVlanTCI = 16
	vlanIDMask     = 0x0fff
	macHeaderLen   = 12 // destination and source MAC
	maxFrame       = 65536
)

// trunk is a packet socket on the host's trunk interface.
type trunk struct {
	fd      int
	ifindex int
}

func openTrunk(ifindex int) (*trunk, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, err
	}
	t := &trunk{fd: fd, ifindex: ifindex}
	if err = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err == nil {
		err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return t, nil
}

func (t *trunk) close() error { return unix.Close(t.fd) }

// toTap passes every frame received on the trunk with vlanID to the tap, untagged.
func (t *trunk) toTap(tap *os.File, vlanID uint16) error {
	buf := make([]byte, maxFrame)
	oob := make([]byte, unix.CmsgSpace(32))
	for {
		n, oobn, _, from, err := unix.Recvmsg(t.fd, buf, oob, 0)
		if err != nil {
			return fmt.Errorf("reading the trunk: %w", err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // what this host sent
		}
		frame := buf[:n]
		tag, tagged := auxVlan(oob[:oobn])
		if !tagged && n >= macHeaderLen+4 && binary.BigEndian.Uint16(frame[macHeaderLen:]) == unix.ETH_P_8021Q {
			// A tag the kernel left in the frame.
			tag, tagged = binary.BigEndian.Uint16(frame[macHeaderLen+2:]), true
			frame = append(frame[:macHeaderLen:macHeaderLen], frame[macHeaderLen+4:]...)
		}
		if !tagged || tag&vlanIDMask != vlanID {
			continue
		}
		if _, err = tap.Write(frame); err != nil {
			return fmt.Errorf("writing the tap: %w", err)
		}
	}
}

// fromTap sends every frame the host sends through the tap out of the trunk, tagged with vlanID.
func (t *trunk) fromTap(tap *os.File, vlanID uint16) error {
	buf := make([]byte, maxFrame)
	out := make([]byte, maxFrame+4)
	to := &unix.SockaddrLinklayer{Ifindex: t.ifindex, Halen: 6}
	for {
		n, err := tap.Read(buf)
		if err != nil {
			return fmt.Errorf("reading the tap: %w", err)
		}
		if n < macHeaderLen+2 {
			continue
		}
		copy(out, buf[:macHeaderLen])
		binary.BigEndian.PutUint16(out[macHeaderLen:], unix.ETH_P_8021Q)
		binary.BigEndian.PutUint16(out[macHeaderLen+2:], vlanID)
		copy(out[macHeaderLen+4:], buf[macHeaderLen:n])
		copy(to.Addr[:], buf[:6])
		if err = unix.Sendto(t.fd, out[:n+4], 0, to); err != nil {
			return fmt.Errorf("writing the trunk: %w", err)
		}
	}
}

// auxVlan reads the VLAN TCI of a received frame from its PACKET_AUXDATA control message.
func auxVlan(oob []byte) (uint16, bool) {
	messages, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range messages {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < auxdataVlanTCI+2 {
			continue
		}
		if binary.NativeEndian.Uint32(m.Data)&tpStatusVlanValid == 0 {
			return 0, false
		}
		return binary.NativeEndian.Uint16(m.Data[auxdataVlanTCI:]), true
	}
	return 0, false
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
