package routeview

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// frActToTable is FR_ACT_TO_TBL, the action of a rule that looks up a table.
const frActToTable = 1

// Op is one rtnetlink write: a rule or route add, replace or delete.
type Op struct {
	msgType uint16
	flags   netlink.HeaderFlags
	payload []byte
	// err is why the write could not be encoded; it fails as the kernel would have failed it.
	err error
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
	case o.flags&netlink.Replace != 0:
		return OpReplaced
	default:
		return OpAdded
	}
}

func newOp(msgType uint16, flags netlink.HeaderFlags, m rtnetlink.Message, alreadyDone syscall.Errno, what fmt.Stringer) Op {
	payload, err := m.MarshalBinary()
	return Op{msgType: msgType, flags: flags, payload: payload, err: err, alreadyDone: alreadyDone, what: what}
}

// AddOp adds the rule. It leaves out NLM_F_EXCL: the caller saw in the view, under the namespace
// lock, that the rule is missing, and with the flag the kernel compares the new rule with every
// existing one, which is quadratic at scale.
func (r *Rule) AddOp() Op {
	return newOp(unix.RTM_NEWRULE, netlink.Create, r.message(), 0, r)
}

// DeleteOp deletes the rule; the kernel matches its protocol too, so a foreign rule is never hit.
func (r *Rule) DeleteOp() Op {
	return newOp(unix.RTM_DELRULE, 0, r.message(), unix.ENOENT, r)
}

func (r *Rule) message() *rtnetlink.RuleMessage {
	m := &rtnetlink.RuleMessage{Family: r.Family, Table: unix.RT_TABLE_UNSPEC, Action: frActToTable,
		Attributes: &rtnetlink.RuleAttributes{Priority: &r.Priority, Table: &r.Table, Protocol: &r.Protocol}}
	if r.Sel.Src.IsValid() {
		src := ipOf(r.Sel.Src.Addr())
		m.SrcLength, m.Attributes.Src = uint8(r.Sel.Src.Bits()), &src
	}
	if r.Sel.Proto != 0 {
		m.Attributes.IPProto = &r.Sel.Proto
	}
	if r.Sel.Sport != (PortRange{}) {
		m.Attributes.SPortRange = &rtnetlink.RulePortRange{Start: r.Sel.Sport.Start, End: r.Sel.Sport.End}
	}
	if r.Sel.Dport != (PortRange{}) {
		m.Attributes.DPortRange = &rtnetlink.RulePortRange{Start: r.Sel.Dport.Start, End: r.Sel.Dport.End}
	}
	return m
}

// AddOp creates the route and fails with EEXIST when its slot is taken, so a route that appeared
// since the view was read is never overwritten.
func (r *Route) AddOp() Op {
	return newOp(unix.RTM_NEWROUTE, netlink.Create|netlink.Excl, r.message(r.Scope, unix.RTN_UNICAST), 0, r)
}

// ReplaceOp overwrites whatever holds the route's slot; callers use it only where the view shows
// one of the forwarder's own routes.
func (r *Route) ReplaceOp() Op {
	return newOp(unix.RTM_NEWROUTE, netlink.Create|netlink.Replace, r.message(r.Scope, unix.RTN_UNICAST), 0, r)
}

// DeleteOp deletes the route; the kernel matches its protocol, link and gateway too.
func (r *Route) DeleteOp() Op {
	return newOp(unix.RTM_DELROUTE, 0, r.message(unix.RT_SCOPE_NOWHERE, unix.RTN_UNSPEC), unix.ESRCH, r)
}

func (r *Route) message(scope, routeType uint8) *rtnetlink.RouteMessage {
	m := &rtnetlink.RouteMessage{Family: r.Family, DstLength: uint8(r.Dst.Bits()), Tos: r.Tos, Table: unix.RT_TABLE_UNSPEC,
		Protocol: r.Protocol, Scope: scope, Type: routeType,
		// An invalid destination is an empty address the encoder refuses, never a default route.
		Attributes: rtnetlink.RouteAttributes{Table: r.Table, Dst: ipOf(r.Dst.Addr()), OutIface: uint32(r.Oif), Priority: r.Priority}}
	if r.Onlink {
		m.Flags = unix.RTNH_F_ONLINK
	}
	if r.Gw.IsValid() {
		m.Attributes.Gateway = ipOf(r.Gw)
	}
	return m
}

func ipOf(addr netip.Addr) net.IP {
	if !addr.IsValid() {
		return net.IP{}
	}
	return addr.AsSlice()
}
