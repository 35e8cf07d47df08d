package netwatch

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkName reads IFLA_IFNAME from an RTM_NEWLINK or RTM_DELLINK message.
func linkName(data []byte) string {
	attrs, err := nl.ParseRouteAttr(data[unix.SizeofIfInfomsg:])
	if err != nil {
		return ""
	}
	for _, attr := range attrs {
		if attr.Attr.Type == unix.IFLA_IFNAME {
			value := attr.Value
			for len(value) > 0 && value[len(value)-1] == 0 {
				value = value[:len(value)-1]
			}
			return string(value)
		}
	}
	return ""
}

// routeTable reads the table of a route or rule message: RTA_TABLE (FRA_TABLE) when present, the
// 8-bit header field otherwise. Rule messages share the route header layout.
func routeTable(data []byte) int {
	msg := nl.DeserializeRtMsg(data)
	table := int(msg.Table)
	attrs, err := nl.ParseRouteAttr(data[unix.SizeofRtMsg:])
	if err != nil {
		return table
	}
	for _, attr := range attrs {
		if attr.Attr.Type == unix.RTA_TABLE && len(attr.Value) >= 4 {
			table = int(binary.NativeEndian.Uint32(attr.Value))
		}
	}
	return table
}

// prefix reads an address attribute (IFA_ADDRESS, RTA_DST) and renders it with its length.
func prefix(attrData []byte, attrType uint16, length uint8) string {
	attrs, err := nl.ParseRouteAttr(attrData)
	if err != nil {
		return ""
	}
	for _, attr := range attrs {
		if attr.Attr.Type == attrType {
			return fmt.Sprintf("%s/%d", net.IP(attr.Value), length)
		}
	}
	return fmt.Sprintf("default/%d", length)
}
