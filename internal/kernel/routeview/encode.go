package routeview

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Op is one rtnetlink write: a rule or route add, replace or delete.
type Op struct {
	msgType uint16
	flags   uint16
	payload []byte
	// alreadyDone is the errno meaning the write's effect is already in place (a delete of something gone).
	alreadyDone syscall.Errno
	what        fmt.Stringer
}

// Kinds of writes, as Op.Kind names them.
const (
	OpAdded    = "added"
	OpReplaced = "replaced"
	OpDeleted  = "deleted"
)

// Kind says whether the write adds, replaces or deletes: what the metrics count it as.
func (o Op) Kind() string {
	switch {
	case o.msgType == unix.RTM_DELRULE || o.msgType == unix.RTM_DELROUTE:
		return OpDeleted
	case o.flags&unix.NLM_F_REPLACE != 0:
		return OpReplaced
	default:
		return OpAdded
	}
}

// AddOp adds the rule. It leaves out NLM_F_EXCL: the caller saw in the view, under the namespace
// lock, that the rule is missing, and with the flag the kernel compares the new rule with every
// existing one, which is quadratic at scale.
func (r *Rule) AddOp() Op {
	return Op{msgType: unix.RTM_NEWRULE, flags: unix.NLM_F_CREATE, payload: r.serialize(), what: r}
}

// DeleteOp deletes the rule; the kernel matches its protocol too, so a foreign rule is never hit.
func (r *Rule) DeleteOp() Op {
	return Op{msgType: unix.RTM_DELRULE, payload: r.serialize(), alreadyDone: unix.ENOENT, what: r}
}

func (r *Rule) serialize() []byte {
	header := make([]byte, sizeofFibRuleHdr)
	header[0] = r.Family
	header[4] = unix.RT_TABLE_UNSPEC
	header[7] = frActToTable
	b := appendUint32Attr(header, unix.FRA_PRIORITY, r.Priority)
	b = appendUint32Attr(b, unix.FRA_TABLE, r.Table)
	b = appendAttr(b, unix.FRA_PROTOCOL, []byte{r.Protocol})
	if r.Sel.Src.IsValid() {
		b[2] = uint8(r.Sel.Src.Bits())
		b = appendAttr(b, unix.FRA_SRC, r.Sel.Src.Addr().AsSlice())
	}
	if r.Sel.Proto != 0 {
		b = appendAttr(b, unix.FRA_IP_PROTO, []byte{r.Sel.Proto})
	}
	if r.Sel.Sport != (PortRange{}) {
		b = appendAttr(b, unix.FRA_SPORT_RANGE, portRangeBytes(r.Sel.Sport))
	}
	if r.Sel.Dport != (PortRange{}) {
		b = appendAttr(b, unix.FRA_DPORT_RANGE, portRangeBytes(r.Sel.Dport))
	}
	return b
}

func portRangeBytes(p PortRange) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint16(b[0:2], p.Start)
	binary.NativeEndian.PutUint16(b[2:4], p.End)
	return b
}

// AddOp creates the route and fails with EEXIST when its slot is taken, so a route that appeared
// since the view was read is never overwritten.
func (r *Route) AddOp() Op {
	return Op{msgType: unix.RTM_NEWROUTE, flags: unix.NLM_F_CREATE | unix.NLM_F_EXCL, payload: r.serialize(r.Scope, unix.RTN_UNICAST), what: r}
}

// ReplaceOp overwrites whatever holds the route's slot; callers use it only where the view shows
// one of the forwarder's own routes.
func (r *Route) ReplaceOp() Op {
	return Op{msgType: unix.RTM_NEWROUTE, flags: unix.NLM_F_CREATE | unix.NLM_F_REPLACE, payload: r.serialize(r.Scope, unix.RTN_UNICAST), what: r}
}

// DeleteOp deletes the route; the kernel matches its protocol, link and gateway too.
func (r *Route) DeleteOp() Op {
	return Op{msgType: unix.RTM_DELROUTE, payload: r.serialize(unix.RT_SCOPE_NOWHERE, unix.RTN_UNSPEC), alreadyDone: unix.ESRCH, what: r}
}

func (r *Route) serialize(scope, routeType uint8) []byte {
	b := make([]byte, unix.SizeofRtMsg)
	b[0] = r.Family
	b[1] = uint8(r.Dst.Bits())
	b[3] = r.Tos
	b[4] = unix.RT_TABLE_UNSPEC
	b[5] = r.Protocol
	b[6] = scope
	b[7] = routeType
	if r.Onlink {
		binary.NativeEndian.PutUint32(b[8:12], unix.RTNH_F_ONLINK)
	}
	b = appendUint32Attr(b, unix.RTA_TABLE, r.Table)
	b = appendAttr(b, unix.RTA_DST, r.Dst.Addr().AsSlice())
	if r.Oif != 0 {
		b = appendUint32Attr(b, unix.RTA_OIF, uint32(r.Oif))
	}
	if r.Gw.IsValid() {
		b = appendAttr(b, unix.RTA_GATEWAY, r.Gw.AsSlice())
	}
	if r.Priority != 0 {
		b = appendUint32Attr(b, unix.RTA_PRIORITY, r.Priority)
	}
	return b
}

// appendAttr appends one rtnetlink attribute, padded to 4 bytes.
func appendAttr(b []byte, attrType uint16, value []byte) []byte {
	length := unix.SizeofRtAttr + len(value)
	var header [unix.SizeofRtAttr]byte
	binary.NativeEndian.PutUint16(header[0:2], uint16(length))
	binary.NativeEndian.PutUint16(header[2:4], attrType)
	b = append(b, header[:]...)
	b = append(b, value...)
	for range rtaAlign(length) - length {
		b = append(b, 0)
	}
	return b
}

func appendUint32Attr(b []byte, attrType uint16, value uint32) []byte {
	var v [4]byte
	binary.NativeEndian.PutUint32(v[:], value)
	return appendAttr(b, attrType, v[:])
}

// appendMessage frames payload as one netlink message.
func appendMessage(buf []byte, msgType, flags uint16, seq uint32, payload []byte) []byte {
	var header [unix.SizeofNlMsghdr]byte
	binary.NativeEndian.PutUint32(header[0:4], uint32(unix.SizeofNlMsghdr+len(payload)))
	binary.NativeEndian.PutUint16(header[4:6], msgType)
	binary.NativeEndian.PutUint16(header[6:8], flags)
	binary.NativeEndian.PutUint32(header[8:12], seq)
	buf = append(buf, header[:]...)
	return append(buf, payload...)
}

func rtaAlign(length int) int {
	return (length + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
}

func nlmAlign(length int) int {
	return (length + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
}
