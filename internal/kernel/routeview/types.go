package routeview

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// MainTable is the routing table of ordinary routes.
const MainTable = unix.RT_TABLE_MAIN

// ipv6DefaultMetric is what the kernel gives an IPv6 route added with metric 0.
const ipv6DefaultMetric = 1024

// PortRange is an inclusive port range; the zero value matches every port.
type PortRange struct{ Start, End uint16 }

// Selector is what a policy rule matches on besides its family. It is comparable, so rules are
// matched without formatting.
type Selector struct {
	// Src is the zero Prefix when the rule matches every source.
	Src   netip.Prefix
	Proto uint8
	Sport PortRange
	Dport PortRange
}

func (s Selector) String() string {
	src := "all"
	if s.Src.IsValid() {
		src = s.Src.String()
	}
	return fmt.Sprintf("from %s proto %d sport %d-%d dport %d-%d", src, s.Proto, s.Sport.Start, s.Sport.End, s.Dport.Start, s.Dport.End)
}

// Rule is an ip rule as far as the forwarder cares about it.
type Rule struct {
	Family   uint8
	Sel      Selector
	Table    uint32
	Priority uint32
	Protocol uint8
	// Plain is false for a rule that matches on, or does, anything a Selector and a table lookup cannot
	// express: such a rule is never the forwarder's to change.
	Plain bool
}

func (r *Rule) String() string {
	return fmt.Sprintf("rule family %d %s priority %d table %d proto %d", r.Family, r.Sel, r.Priority, r.Table, r.Protocol)
}

// Route is a route as far as the forwarder cares about it.
type Route struct {
	Family   uint8
	Table    uint32
	Dst      netip.Prefix
	Tos      uint8
	Priority uint32
	Gw       netip.Addr
	Oif      int
	Prefsrc  netip.Addr
	Protocol uint8
	Scope    uint8
	Type     uint8
	Onlink   bool
	// Plain is true for a unicast route with one next hop and nothing set beyond the fields above
	// except its scope, without a preferred source: the only shape the forwarder installs.
	Plain bool
}

func (r *Route) String() string {
	via := ""
	if r.Gw.IsValid() {
		via = " via " + r.Gw.String()
	}
	return fmt.Sprintf("route table %d %s%s dev %d metric %d proto %d", r.Table, r.Dst, via, r.Oif, r.Priority, r.Protocol)
}

// Slot is where the kernel keeps a route and what a replace overwrites: a family, table,
// destination, TOS and metric.
type Slot struct {
	Family   uint8
	Table    uint32
	Dst      netip.Prefix
	Tos      uint8
	Priority uint32
}

// Slot returns the route's slot, with the metric the kernel gives a route added without one.
func (r *Route) Slot() Slot {
	return Slot{Family: r.Family, Table: r.Table, Dst: r.Dst, Tos: r.Tos, Priority: Metric(r.Family, r.Priority)}
}

// Metric is the metric the kernel stores for a route of family added with priority.
func Metric(family uint8, priority uint32) uint32 {
	if family == unix.AF_INET6 && priority == 0 {
		return ipv6DefaultMetric
	}
	return priority
}

// FamilyOf is the address family of addr.
func FamilyOf(addr netip.Addr) uint8 {
	if addr.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}
