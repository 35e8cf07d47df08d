package routeview

import (
	"bytes"
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

const (
	// sizeofFibRuleHdr is struct fib_rule_hdr: family, dst_len, src_len, tos, table, two reserved bytes,
	// action, then 32 bits of flags.
	sizeofFibRuleHdr = 12
	fibRuleInvert    = 0x2
	frActToTable     = 1
	// unsetU32 is how the kernel reports an unset suppress_prefixlen or suppress_ifgroup.
	unsetU32 = 0xffffffff
	// fraSportMask and fraDportMask (Linux 6.12+) come with every port range; 0xffff means no masking.
	fraSportMask = 28
	fraDportMask = 29
	// nlaTypeMask strips the nested and byte-order flags from an attribute type.
	nlaTypeMask = 0x3fff
	// rtaCacheInfo and rtaPref are what the kernel reports with every IPv6 route; rtaMetrics may be empty.
	rtaMetrics   = unix.RTA_METRICS
	rtaCacheInfo = unix.RTA_CACHEINFO
	rtaPref      = unix.RTA_PREF
	// icmpv6RouterPrefMedium is the router preference of a route nobody gave one.
	icmpv6RouterPrefMedium = 0
)

// attrs iterates over rtnetlink attributes; it stops, reporting false, at the first malformed one.
func attrs(b []byte, each func(attrType uint16, value []byte)) bool {
	for len(b) >= unix.SizeofRtAttr {
		length := int(binary.NativeEndian.Uint16(b[0:2]))
		if length < unix.SizeofRtAttr || length > len(b) {
			return false
		}
		each(binary.NativeEndian.Uint16(b[2:4])&nlaTypeMask, b[unix.SizeofRtAttr:length])
		b = b[min(rtaAlign(length), len(b)):]
	}
	return true
}

// parseRule decodes an RTM_NEWRULE or RTM_DELRULE payload. A rule with any attribute a policy cannot
// produce is kept, as not plain.
func parseRule(payload []byte) (rule Rule, ok bool) {
	if len(payload) < sizeofFibRuleHdr {
		return rule, false
	}
	dstLen, srcLen, tos := payload[1], payload[2], payload[3]
	action := payload[7]
	flags := binary.NativeEndian.Uint32(payload[8:12])
	rule = Rule{Family: payload[0], Table: uint32(payload[4]),
		Plain: action == frActToTable && flags&fibRuleInvert == 0 && tos == 0 && dstLen == 0}
	srcSeen := false
	ok = attrs(payload[sizeofFibRuleHdr:], func(attrType uint16, value []byte) {
		switch {
		case attrType == unix.FRA_TABLE && len(value) == 4:
			rule.Table = binary.NativeEndian.Uint32(value)
		case attrType == unix.FRA_PRIORITY && len(value) == 4:
			rule.Priority = binary.NativeEndian.Uint32(value)
		case attrType == unix.FRA_PROTOCOL && len(value) == 1:
			rule.Protocol = value[0]
		case attrType == unix.FRA_IP_PROTO && len(value) == 1:
			rule.Sel.Proto = value[0]
		case attrType == unix.FRA_SRC:
			srcSeen = true
			rule.Sel.Src = prefixFromBytes(value, int(srcLen))
			rule.Plain = rule.Plain && rule.Sel.Src.IsValid()
		case attrType == unix.FRA_SPORT_RANGE && len(value) == 4:
			rule.Sel.Sport = PortRange{Start: binary.NativeEndian.Uint16(value[0:2]), End: binary.NativeEndian.Uint16(value[2:4])}
		case attrType == unix.FRA_DPORT_RANGE && len(value) == 4:
			rule.Sel.Dport = PortRange{Start: binary.NativeEndian.Uint16(value[0:2]), End: binary.NativeEndian.Uint16(value[2:4])}
		case (attrType == unix.FRA_SUPPRESS_PREFIXLEN || attrType == unix.FRA_SUPPRESS_IFGROUP) &&
			len(value) == 4 && binary.NativeEndian.Uint32(value) == unsetU32:
		case (attrType == fraSportMask || attrType == fraDportMask) && len(value) == 2 && binary.NativeEndian.Uint16(value) == 0xffff:
		default:
			rule.Plain = false
		}
	})
	// A source length without a source address matches on something a Selector does not hold.
	if srcLen != 0 && !srcSeen {
		rule.Plain = false
	}
	return rule, ok
}

// parseRoute decodes an RTM_NEWROUTE or RTM_DELROUTE payload.
func parseRoute(payload []byte) (route Route, ok bool) {
	if len(payload) < unix.SizeofRtMsg {
		return route, false
	}
	family, dstLen, srcLen := payload[0], int(payload[1]), payload[2]
	flags := binary.NativeEndian.Uint32(payload[8:12])
	route = Route{
		Family: family, Tos: payload[3], Table: uint32(payload[4]), Protocol: payload[5], Scope: payload[6], Type: payload[7],
		Onlink: flags&unix.RTNH_F_ONLINK != 0,
	}
	if family != unix.AF_INET && family != unix.AF_INET6 {
		return route, false
	}
	plain := srcLen == 0 && route.Tos == 0 && route.Type == unix.RTN_UNICAST
	dstSeen := false
	ok = attrs(payload[unix.SizeofRtMsg:], func(attrType uint16, value []byte) {
		switch attrType {
		case unix.RTA_TABLE:
			if len(value) == 4 {
				route.Table = binary.NativeEndian.Uint32(value)
			}
		case unix.RTA_DST:
			dstSeen = true
			route.Dst = prefixFromBytes(value, dstLen)
		case unix.RTA_PRIORITY:
			if len(value) == 4 {
				route.Priority = binary.NativeEndian.Uint32(value)
			}
		case unix.RTA_OIF:
			if len(value) == 4 {
				route.Oif = int(int32(binary.NativeEndian.Uint32(value)))
			}
		case unix.RTA_GATEWAY:
			route.Gw = addrFromBytes(value)
			plain = plain && route.Gw.IsValid()
		case unix.RTA_PREFSRC:
			route.Prefsrc = addrFromBytes(value)
			plain = false
		case rtaCacheInfo:
		case rtaPref:
			plain = plain && len(value) == 1 && value[0] == icmpv6RouterPrefMedium
		case rtaMetrics:
			plain = plain && len(value) == 0
		default:
			plain = false
		}
	})
	if !dstSeen {
		route.Dst = netip.PrefixFrom(unspecified(family), 0)
	}
	// A destination that does not fit the family or its length is no route of any shape the forwarder knows.
	if !route.Dst.IsValid() || FamilyOf(route.Dst.Addr()) != family || (route.Gw.IsValid() && FamilyOf(route.Gw) != family) {
		return route, false
	}
	route.Plain = plain && route.Oif != 0
	return route, ok
}

// link is what an RTM_NEWLINK or RTM_DELLINK payload says of an interface.
type link struct {
	index int
	flags uint32
	name  string
}

func parseLink(payload []byte) (l link, ok bool) {
	if len(payload) < unix.SizeofIfInfomsg {
		return l, false
	}
	l.index, l.flags = int(int32(binary.NativeEndian.Uint32(payload[4:8]))), binary.NativeEndian.Uint32(payload[8:12])
	ok = attrs(payload[unix.SizeofIfInfomsg:], func(attrType uint16, value []byte) {
		if attrType == unix.IFLA_IFNAME {
			l.name = string(bytes.TrimRight(value, "\x00"))
		}
	})
	return l, ok
}

// parseAddr decodes the link index and the local address of an RTM_NEWADDR or RTM_DELADDR payload.
func parseAddr(payload []byte) (index int, addr netip.Addr, ok bool) {
	if len(payload) < unix.SizeofIfAddrmsg {
		return 0, addr, false
	}
	index = int(int32(binary.NativeEndian.Uint32(payload[4:8])))
	ok = attrs(payload[unix.SizeofIfAddrmsg:], func(attrType uint16, value []byte) {
		// IFA_LOCAL is the address itself on point-to-point links, where IFA_ADDRESS is the peer's.
		if attrType == unix.IFA_LOCAL || attrType == unix.IFA_ADDRESS && !addr.IsValid() {
			addr = addrFromBytes(value)
		}
	})
	return index, addr, ok
}

func addrFromBytes(b []byte) netip.Addr {
	addr, ok := netip.AddrFromSlice(b)
	if !ok {
		return netip.Addr{}
	}
	return addr.Unmap()
}

// prefixFromBytes converts an address attribute and a prefix length; it is invalid when they do not fit.
func prefixFromBytes(b []byte, bits int) netip.Prefix {
	addr, ok := netip.AddrFromSlice(b)
	if !ok {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(addr, bits)
}

func unspecified(family uint8) netip.Addr {
	if family == unix.AF_INET6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}
