package dataplane

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func ipv4Packet() []byte {
	pkt := make([]byte, 20)
	pkt[0] = 0x45
	copy(pkt[16:20], net.IPv4(10, 0, 0, 2).To4())
	return pkt
}

func TestIPPart(t *testing.T) {
	ip := ipv4Packet()
	frame := append(make([]byte, 14), ip...)
	binary.BigEndian.PutUint16(frame[12:14], 0x0800)
	require.Equal(t, ip, ipPart(L2, frame))
	require.Equal(t, ip, ipPart(L3, ip))

	arp := make([]byte, 42)
	binary.BigEndian.PutUint16(arp[12:14], 0x0806)
	require.Nil(t, ipPart(L2, arp), "ARP is not IP")
	require.Nil(t, ipPart(L3, []byte{0x10}), "not an IP version nibble")
}

func TestConvertBetweenLayers(t *testing.T) {
	ip := ipv4Packet()
	src := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	dst := net.HardwareAddr{2, 0, 0, 0, 0, 2}

	frame := convert(L3, L2, ip, ip, Egress{SrcMAC: src, DstMAC: dst})
	require.Equal(t, []byte(dst), frame[0:6])
	require.Equal(t, []byte(src), frame[6:12])
	require.Equal(t, uint16(0x0800), binary.BigEndian.Uint16(frame[12:14]))
	require.Equal(t, ip, frame[14:])

	flooded := convert(L3, L2, ip, ip, Egress{SrcMAC: src})
	require.Equal(t, []byte(broadcastMAC), flooded[0:6], "an unresolved next hop is broadcast")

	require.Equal(t, ip, convert(L2, L3, frame, frame[14:], Egress{}))
	require.Nil(t, convert(L2, L3, frame, nil, Egress{}), "non-IP frames cannot enter a tun")
	require.Equal(t, frame, convert(L2, L2, frame, frame[14:], Egress{}))
}

func TestNamespacePath(t *testing.T) {
	require.Equal(t, "/var/run/netns/blue", NamespacePath("blue"))
	require.Equal(t, "/proc/1/ns/net", NamespacePath("/proc/1/ns/net"))
	require.Equal(t, "", NamespacePath(""))
}

func TestVlanPushPop(t *testing.T) {
	frame := make([]byte, 60)
	copy(frame[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(frame[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(frame[12:14], 0x0800)

	_, tagged := vlanTag(frame)
	require.False(t, tagged)
	withTag := pushVlan(frame, 100)
	require.Len(t, withTag, len(frame)+4)
	vlan, tagged := vlanTag(withTag)
	require.True(t, tagged)
	require.Equal(t, uint16(100), vlan)
	require.Equal(t, frame, popVlan(withTag))
}
