package routeview

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The headers are the library's messages; the attributes are walked here, because whether a rule or a
// route is plain depends on every attribute the kernel sent, and the library's RouteMessage drops the ones
// it does not know while its RuleMessage refuses the port masks that Linux 6.12+ sends with every range.
const (
	// sizeofFibRuleHdr is struct fib_rule_hdr.
	sizeofFibRuleHdr = 12
	fibRuleInvert    = 0x2
	// unsetU32 is how the kernel reports an unset suppress_prefixlen or suppress_ifgroup.
	unsetU32 = 0xffffffff
	// fraSportMask and fraDportMask (Linux 6.12+) come with every port range; 0xffff means no masking.
	fraSportMask = 28
	fraDportMask = 29
	// icmpv6RouterPrefMedium is the router preference of a route nobody gave one.
	icmpv6RouterPrefMedium = 0
)

// attrs hands each attribute of b to each; it reports false when b does not hold well-formed attributes.
func attrs(b []byte, each func(attrType uint16, value []byte)) bool {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return false
	}
	for ad.Next() {
		attrType := ad.Type()
		ad.Do(func(value []byte) error {
			each(attrType, value)
			return nil
		})
	}
	return ad.Err() == nil
}

// parseRule decodes an RTM_NEWRULE or RTM_DELRULE payload. A rule with any attribute a policy cannot
// produce is kept, as not plain.
func parseRule(payload []byte) (rule Rule, ok bool) {
	var header rtnetlink.RuleMessage
	if len(payload) < sizeofFibRuleHdr || header.UnmarshalBinary(payload[:sizeofFibRuleHdr]) != nil {
		return rule, false
	}
	rule = Rule{Family: header.Family, Table: uint32(header.Table),
		Plain: header.Action == frActToTable && header.Flags&fibRuleInvert == 0 && header.TOS == 0 && header.DstLength == 0}
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
			rule.Sel.Src = prefixFromBytes(value, int(header.SrcLength))
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
	if header.SrcLength != 0 && !srcSeen {
		rule.Plain = false
	}
	return rule, ok
}

// parseRoute decodes an RTM_NEWROUTE or RTM_DELROUTE payload.
func parseRoute(payload []byte) (route Route, ok bool) {
	var header rtnetlink.RouteMessage
	if len(payload) < unix.SizeofRtMsg || header.UnmarshalBinary(payload[:unix.SizeofRtMsg]) != nil {
		return route, false
	}
	family := header.Family
	route = Route{
		Family: family, Tos: header.Tos, Table: uint32(header.Table), Protocol: header.Protocol, Scope: header.Scope, Type: header.Type,
		Onlink: header.Flags&unix.RTNH_F_ONLINK != 0,
	}
	if family != unix.AF_INET && family != unix.AF_INET6 {
		return route, false
	}
	plain := header.SrcLength == 0 && route.Tos == 0 && route.Type == unix.RTN_UNICAST
	dstSeen := false
	ok = attrs(payload[unix.SizeofRtMsg:], func(attrType uint16, value []byte) {
		switch attrType {
		case unix.RTA_TABLE:
			if len(value) == 4 {
				route.Table = binary.NativeEndian.Uint32(value)
			}
		case unix.RTA_DST:
			dstSeen = true
			route.Dst = prefixFromBytes(value, int(header.DstLength))
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
		case unix.RTA_CACHEINFO:
		case unix.RTA_PREF:
			plain = plain && len(value) == 1 && value[0] == icmpv6RouterPrefMedium
		case unix.RTA_METRICS:
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

// parseLink decodes the index, flags and name of a link; the library's LinkMessage would decode every
// statistic and driver attribute too, and fail on those it does not know.
func parseLink(payload []byte) (l link, ok bool) {
	var header rtnetlink.LinkMessage
	if len(payload) < unix.SizeofIfInfomsg || header.UnmarshalBinary(payload[:unix.SizeofIfInfomsg]) != nil {
		return l, false
	}
	l.index, l.flags = int(int32(header.Index)), header.Flags
	ok = attrs(payload[unix.SizeofIfInfomsg:], func(attrType uint16, value []byte) {
		if attrType == unix.IFLA_IFNAME {
			l.name = strings.TrimRight(string(value), "\x00")
		}
	})
	return l, ok
}

// parseAddr decodes the link index and the local address of an RTM_NEWADDR or RTM_DELADDR payload.
func parseAddr(payload []byte) (index int, addr netip.Addr, ok bool) {
	var header rtnetlink.AddressMessage
	if len(payload) < unix.SizeofIfAddrmsg || header.UnmarshalBinary(payload[:unix.SizeofIfAddrmsg]) != nil {
		return 0, addr, false
	}
	index = int(int32(header.Index))
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
