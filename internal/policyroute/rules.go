package policyroute

import (
	"encoding/binary"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

const (
	// sizeofFibRuleHdr is struct fib_rule_hdr: family, dst_len, src_len, tos, table, two reserved bytes, action,
	// then 32 bits of flags.
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
)

// dumpRules reads every ip rule of both families in one dump and keeps those pointing into our table range.
// It parses in place instead of through the netlink library: this dump runs on every Request and grows with
// every policy in the namespace. A rule with any attribute a policy cannot produce is kept as not plain.
func (w *rtnlConn) dumpRules(o *options) ([]kernelRule, error) {
	var err error
	for range dumpRetries {
		var rules []kernelRule
		var interrupted bool
		if rules, interrupted, err = w.dumpRulesOnce(o); err == nil && !interrupted {
			return rules, nil
		}
		if err == nil {
			err = errors.New("rule dump interrupted by concurrent changes")
		}
	}
	return nil, errors.Wrap(err, "failed to list ip rules")
}

func (w *rtnlConn) dumpRulesOnce(o *options) (rules []kernelRule, interrupted bool, err error) {
	w.seq++
	seq := w.seq
	request := make([]byte, unix.SizeofNlMsghdr+sizeofFibRuleHdr)
	binary.NativeEndian.PutUint32(request[0:4], uint32(len(request)))
	binary.NativeEndian.PutUint16(request[4:6], unix.RTM_GETRULE)
	binary.NativeEndian.PutUint16(request[6:8], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(request[8:12], seq)
	if err := unix.Sendto(w.socket.GetFd(), request, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, false, err
	}
	for {
		n, err := w.receiveRaw()
		if err != nil {
			return nil, false, err
		}
		for b := w.buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			length := int(binary.NativeEndian.Uint32(b[0:4]))
			if length < unix.SizeofNlMsghdr || length > len(b) {
				return nil, false, errors.New("malformed netlink message in rule dump")
			}
			msgType := binary.NativeEndian.Uint16(b[4:6])
			flags := binary.NativeEndian.Uint16(b[6:8])
			msgSeq := binary.NativeEndian.Uint32(b[8:12])
			payload := b[unix.SizeofNlMsghdr:length]
			b = b[min(nlmAlign(length), len(b)):]
			if msgSeq != seq {
				continue
			}
			interrupted = interrupted || flags&unix.NLM_F_DUMP_INTR != 0
			switch msgType {
			case unix.NLMSG_DONE:
				return rules, interrupted, nil
			case unix.NLMSG_ERROR:
				if len(payload) >= 4 {
					if errno := unix.Errno(-int32(binary.NativeEndian.Uint32(payload[:4]))); errno != 0 {
						return nil, false, errno
					}
				}
			case unix.RTM_NEWRULE:
				if rule, ok := parseRule(payload, o); ok {
					rules = append(rules, rule)
				}
			}
		}
	}
}

// parseRule decodes one RTM_NEWRULE payload; ok is false for rules outside the table range.
func parseRule(payload []byte, o *options) (rule kernelRule, ok bool) {
	if len(payload) < sizeofFibRuleHdr {
		return rule, false
	}
	family, dstLen, srcLen, tos := int(payload[0]), payload[1], payload[2], payload[3]
	table := uint32(payload[4])
	action := payload[7]
	flags := binary.NativeEndian.Uint32(payload[8:12])
	rule = kernelRule{family: family, plain: action == frActToTable && flags&fibRuleInvert == 0 && tos == 0 && dstLen == 0}

	for attrs := payload[sizeofFibRuleHdr:]; len(attrs) >= unix.SizeofRtAttr; {
		length := int(binary.NativeEndian.Uint16(attrs[0:2]))
		attrType := binary.NativeEndian.Uint16(attrs[2:4]) & nlaTypeMask
		if length < unix.SizeofRtAttr || length > len(attrs) {
			return rule, false
		}
		value := attrs[unix.SizeofRtAttr:length]
		attrs = attrs[min(nlmAlign(length), len(attrs)):]
		switch {
		case attrType == nl.FRA_TABLE && len(value) == 4:
			table = binary.NativeEndian.Uint32(value)
		case attrType == nl.FRA_PRIORITY && len(value) == 4:
			rule.priority = binary.NativeEndian.Uint32(value)
		case attrType == nl.FRA_PROTOCOL && len(value) >= 1:
			rule.protocol = value[0]
		case attrType == nl.FRA_IP_PROTO && len(value) >= 1:
			rule.sel.proto = int(value[0])
		case attrType == nl.FRA_SRC:
			rule.sel.src = prefixFromBytes(value, int(srcLen))
		case attrType == nl.FRA_SPORT_RANGE && len(value) == 4:
			rule.sel.sport = portRange{start: binary.NativeEndian.Uint16(value[0:2]), end: binary.NativeEndian.Uint16(value[2:4])}
		case attrType == nl.FRA_DPORT_RANGE && len(value) == 4:
			rule.sel.dport = portRange{start: binary.NativeEndian.Uint16(value[0:2]), end: binary.NativeEndian.Uint16(value[2:4])}
		case (attrType == nl.FRA_SUPPRESS_PREFIXLEN || attrType == nl.FRA_SUPPRESS_IFGROUP) &&
			len(value) == 4 && binary.NativeEndian.Uint32(value) == unsetU32:
		case (attrType == fraSportMask || attrType == fraDportMask) && len(value) == 2 && binary.NativeEndian.Uint16(value) == 0xffff:
		default:
			rule.plain = false
		}
	}
	rule.table = table
	return rule, o.inRange(table)
}

func nlmAlign(length int) int {
	return (length + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
}
