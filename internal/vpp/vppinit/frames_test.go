package vppinit_test

import (
	"encoding/binary"
	"net"
)

// Frame builders for the XDP tests: just enough Ethernet, ARP, IPv4, IPv6 and UDP to say what the
// program looks at. Each frame carries a marker in its payload so that the tests can tell where
// it went.

const (
	etherTypeIPv4 = 0x0800
	etherTypeARP  = 0x0806
	etherTypeVLAN = 0x8100
	etherTypeIPv6 = 0x86dd
	protoTCP      = 6
	protoUDP      = 17
	protoICMPv6   = 58
)

func ethernet(dst, src net.HardwareAddr, etherType uint16, payload []byte) []byte {
	frame := append(append(append([]byte{}, dst...), src...), byte(etherType>>8), byte(etherType))
	frame = append(frame, payload...)
	for len(frame) < 60 {
		frame = append(frame, 0) // the minimum Ethernet frame, as a NIC would pad it
	}
	return frame
}

func udp(srcPort, dstPort uint16, payload []byte) []byte {
	header := make([]byte, 8)
	binary.BigEndian.PutUint16(header[0:], srcPort)
	binary.BigEndian.PutUint16(header[2:], dstPort)
	binary.BigEndian.PutUint16(header[4:], uint16(8+len(payload)))
	return append(header, payload...) // checksum 0: none, as VXLAN senders often do
}

// ipv4Options sets what ipv4 writes beyond addresses, protocol and payload.
type ipv4Options struct {
	options  []byte // IP options, a multiple of 4 bytes
	fragment uint16 // flags and offset, host order (0x2000: more fragments)
}

func ipv4(src, dst string, protocol byte, payload []byte, opts ipv4Options) []byte {
	headerLen := 20 + len(opts.options)
	header := make([]byte, headerLen)
	header[0] = 0x40 | byte(headerLen/4)
	binary.BigEndian.PutUint16(header[2:], uint16(headerLen+len(payload)))
	binary.BigEndian.PutUint16(header[6:], opts.fragment)
	header[8] = 64
	header[9] = protocol
	copy(header[12:], net.ParseIP(src).To4())
	copy(header[16:], net.ParseIP(dst).To4())
	copy(header[20:], opts.options)
	binary.BigEndian.PutUint16(header[10:], checksum(header))
	return append(header, payload...)
}

func ipv6(src, dst string, nextHeader byte, payload []byte) []byte {
	header := make([]byte, 40)
	header[0] = 0x60
	binary.BigEndian.PutUint16(header[4:], uint16(len(payload)))
	header[6] = nextHeader
	header[7] = 64
	copy(header[8:], net.ParseIP(src).To16())
	copy(header[24:], net.ParseIP(dst).To16())
	return append(header, payload...)
}

// arp is an ARP request (op 1) or reply (op 2) over Ethernet for IPv4.
func arp(op uint16, senderMAC net.HardwareAddr, senderIP string, targetMAC net.HardwareAddr, targetIP string, marker []byte) []byte {
	body := []byte{0, 1, 8, 0, 6, 4, byte(op >> 8), byte(op)}
	body = append(append(body, senderMAC...), net.ParseIP(senderIP).To4()...)
	body = append(append(body, targetMAC...), net.ParseIP(targetIP).To4()...)
	return append(body, marker...) // trailing bytes are padding to ARP
}

// vlan is an 802.1Q tag in front of the inner EtherType and payload.
func vlan(id, innerType uint16, payload []byte) []byte {
	return append([]byte{byte(id >> 8), byte(id), byte(innerType >> 8), byte(innerType)}, payload...)
}

func checksum(header []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(header); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(header[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
