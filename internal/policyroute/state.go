package policyroute

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// dumpRetries bounds re-reads when a dump was interrupted by a concurrent change (other chain elements write
// routes into the same namespace at the same time).
const dumpRetries = 5

// kernelRule is an ip rule in the shape a policy produces: a selector that looks up one table.
type kernelRule struct {
	family   int
	sel      selector
	table    uint32
	priority uint32
	protocol uint8
	// plain is false for rules matching on anything a policy cannot express; those are never ours to change.
	plain bool
}

func (r *kernelRule) String() string {
	return fmt.Sprintf("rule family %d %s priority %d table %d proto %d", r.family, r.sel, r.priority, r.table, r.protocol)
}

// ruleIdentity is what tells two rules apart in a reconciliation.
type ruleIdentity struct {
	family   int
	sel      selector
	table    uint32
	priority uint32
}

func (r *kernelRule) identity() ruleIdentity {
	return ruleIdentity{family: r.family, sel: r.sel, table: r.table, priority: r.priority}
}

// addOp leaves out NLM_F_EXCL: the caller saw in a dump, under the namespace lock, that the rule is missing,
// and with the flag the kernel compares the new rule with every existing one, which is quadratic at scale.
func (r *kernelRule) addOp() writeOp {
	return writeOp{msgType: unix.RTM_NEWRULE, flags: unix.NLM_F_CREATE, payload: r.serialize(), what: r}
}

func (r *kernelRule) deleteOp() writeOp {
	return writeOp{msgType: unix.RTM_DELRULE, payload: r.serialize(), alreadyDone: unix.ENOENT, what: r}
}

func (r *kernelRule) serialize() []byte {
	msg := &nl.RtMsg{RtMsg: unix.RtMsg{Family: uint8(r.family), Table: unix.RT_TABLE_UNSPEC, Type: unix.RTN_UNICAST}}
	attrs := []*nl.RtAttr{
		uint32Attr(nl.FRA_PRIORITY, r.priority),
		uint32Attr(nl.FRA_TABLE, r.table),
		nl.NewRtAttr(nl.FRA_PROTOCOL, []byte{r.protocol}),
	}
	if r.sel.src.IsValid() {
		msg.Src_len = uint8(r.sel.src.Bits())
		attrs = append(attrs, nl.NewRtAttr(nl.FRA_SRC, r.sel.src.Addr().AsSlice()))
	}
	if r.sel.proto != 0 {
		attrs = append(attrs, nl.NewRtAttr(nl.FRA_IP_PROTO, []byte{uint8(r.sel.proto)}))
	}
	if r.sel.sport != (portRange{}) {
		attrs = append(attrs, portRangeAttr(nl.FRA_SPORT_RANGE, r.sel.sport))
	}
	if r.sel.dport != (portRange{}) {
		attrs = append(attrs, portRangeAttr(nl.FRA_DPORT_RANGE, r.sel.dport))
	}
	return serialize(msg, attrs...)
}

func portRangeAttr(attrType int, p portRange) *nl.RtAttr {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint16(b[0:2], p.start)
	binary.NativeEndian.PutUint16(b[2:4], p.end)
	return nl.NewRtAttr(attrType, b)
}

// kernelRoute is a route in one of our candidate tables.
type kernelRoute struct {
	family   int
	table    uint32
	dst      netip.Prefix
	gw       netip.Addr
	oif      int
	priority int
	protocol uint8
	// plain is true for a single-next-hop unicast route with nothing set but what this package sets.
	plain bool
}

func (r *kernelRoute) String() string {
	return fmt.Sprintf("route table %d %s via %v dev %d metric %d proto %d", r.table, r.dst, r.gw, r.oif, r.priority, r.protocol)
}

// routeIdentity identifies a route within a table the way the kernel does when replacing it.
type routeIdentity struct {
	dst      netip.Prefix
	priority int
}

func (r *kernelRoute) identity() routeIdentity {
	return routeIdentity{dst: r.dst, priority: r.priority}
}

func routeFromNetlink(r *netlink.Route) kernelRoute {
	out := kernelRoute{
		family:   r.Family,
		table:    uint32(r.Table),
		dst:      prefixFromIPNet(r.Dst, r.Family),
		oif:      r.LinkIndex,
		priority: r.Priority,
		protocol: uint8(r.Protocol),
	}
	if gw, ok := netip.AddrFromSlice(r.Gw); ok {
		out.gw = gw.Unmap()
	}
	out.plain = r.Type == unix.RTN_UNICAST && r.Scope == netlink.SCOPE_UNIVERSE && len(r.MultiPath) == 0 &&
		r.Src == nil && r.Encap == nil && r.Via == nil && r.NewDst == nil && r.Tos == 0 && r.Realm == 0 &&
		r.MTU == 0 && r.AdvMSS == 0 && r.Hoplimit == 0 && (r.Gw == nil || r.Flags&unix.RTNH_F_ONLINK != 0)
	return out
}

func (r *kernelRoute) equal(o *kernelRoute) bool {
	return r.plain && o.plain && r.oif == o.oif && r.gw == o.gw && r.protocol == o.protocol
}

func (r *kernelRoute) replaceOp() writeOp {
	return writeOp{msgType: unix.RTM_NEWROUTE, flags: unix.NLM_F_CREATE | unix.NLM_F_REPLACE, payload: r.serialize(unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST), what: r}
}

func (r *kernelRoute) deleteOp() writeOp {
	return writeOp{msgType: unix.RTM_DELROUTE, payload: r.serialize(unix.RT_SCOPE_NOWHERE, unix.RTN_UNSPEC), alreadyDone: unix.ESRCH, what: r}
}

func (r *kernelRoute) serialize(scope, routeType uint8) []byte {
	msg := &nl.RtMsg{RtMsg: unix.RtMsg{
		Family: uint8(r.family), Dst_len: uint8(r.dst.Bits()), Table: unix.RT_TABLE_UNSPEC,
		Protocol: r.protocol, Scope: scope, Type: routeType,
	}}
	attrs := []*nl.RtAttr{
		uint32Attr(unix.RTA_TABLE, r.table),
		nl.NewRtAttr(unix.RTA_DST, r.dst.Addr().AsSlice()),
		uint32Attr(unix.RTA_OIF, uint32(r.oif)),
	}
	if r.gw.IsValid() {
		msg.Flags = unix.RTNH_F_ONLINK
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_GATEWAY, r.gw.AsSlice()))
	}
	if r.priority != 0 {
		attrs = append(attrs, uint32Attr(unix.RTA_PRIORITY, uint32(r.priority)))
	}
	return serialize(msg, attrs...)
}

// listRoutes dumps IPv4 and IPv6 routes matching filter; the kernel applies the table, link and protocol
// filters itself because the handle has strict checking on. The families are dumped one by one: an unspecified
// family would also reach multicast and MPLS dumpers, which do not all accept these filters.
func (n *namespace) listRoutes(o *options, filter *netlink.Route, mask uint64) ([]kernelRoute, error) {
	var out []kernelRoute
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		start := len(out)
		err := retryInterrupted(func() error {
			out = out[:start]
			return n.handle.RouteListFilteredIter(family, filter, mask|netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
				if o.inRange(uint32(r.Table)) {
					out = append(out, routeFromNetlink(&r))
				}
				return true
			})
		})
		// A table that does not exist in a family is an error, not an empty dump.
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return nil, errors.Wrapf(err, "failed to list routes (family %d, table %d, dev %d)", family, filter.Table, filter.LinkIndex)
		}
	}
	return out, nil
}

func retryInterrupted(dump func() error) error {
	var err error
	for range dumpRetries {
		if err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return err
		}
	}
	return err
}
