package policyroute

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// selector is what an ip rule matches on; it identifies a policy within a connection and, together with the
// connection ID, seeds the policy's table ID. The address family is not part of it: a policy without a
// source prefix may need rules in both families, and both look up the same table ID.
type selector = routeview.Selector

// selectorKey is the selector's hash input; it must never change, or tables installed by an earlier
// version would no longer be found on their probe sequence.
func selectorKey(b []byte, s selector) []byte {
	if s.Src.IsValid() {
		b = append(b, s.Src.Addr().AsSlice()...)
		b = append(b, byte(s.Src.Bits()))
	}
	return append(b, 0xff, s.Proto, byte(s.Sport.Start>>8), byte(s.Sport.Start), byte(s.Sport.End>>8), byte(s.Sport.End),
		byte(s.Dport.Start>>8), byte(s.Dport.Start), byte(s.Dport.End>>8), byte(s.Dport.End))
}

type route struct {
	family uint8
	dst    netip.Prefix
	// gw is the zero Addr for a route straight through the link.
	gw netip.Addr
}

// policy is a validated PolicyRoute: its selector, the families it needs a rule in and its routes.
type policy struct {
	sel      selector
	families []uint8
	routes   []route
}

// ipProtocolNumbers are the protocol names a policy may use instead of an IANA number.
var ipProtocolNumbers = map[string]int{
	"icmp": unix.IPPROTO_ICMP, "igmp": unix.IPPROTO_IGMP, "tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP,
	"dccp": unix.IPPROTO_DCCP, "gre": unix.IPPROTO_GRE, "esp": unix.IPPROTO_ESP, "ah": unix.IPPROTO_AH,
	"icmpv6": unix.IPPROTO_ICMPV6, "ipv6-icmp": unix.IPPROTO_ICMPV6, "sctp": unix.IPPROTO_SCTP,
	"udplite": unix.IPPROTO_UDPLITE,
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// parsePolicies validates every policy before anything is written, so bad input leaves the kernel untouched.
func parsePolicies(in []*networkservice.PolicyRoute) ([]policy, error) {
	out := make([]policy, 0, len(in))
	seen := make(map[selector]int, len(in))
	for i, p := range in {
		parsed, err := parsePolicy(i, p)
		if err != nil {
			return nil, err
		}
		if first, ok := seen[parsed.sel]; ok {
			return nil, invalid("policies[%d]: same selector (from, proto, ports) as policies[%d]", i, first)
		}
		seen[parsed.sel] = i
		out = append(out, parsed)
	}
	return out, nil
}

func parsePolicy(i int, p *networkservice.PolicyRoute) (policy, error) {
	var out policy
	var err error
	if p.GetFrom() != "" {
		if out.sel.Src, err = parsePrefix(p.GetFrom()); err != nil {
			return out, invalid("policies[%d].from: %v", i, err)
		}
	}
	if out.sel.Proto, err = parseProtocol(p.GetProto()); err != nil {
		return out, invalid("policies[%d].proto: %v", i, err)
	}
	if out.sel.Sport, err = parsePortRange(p.GetSrcPort()); err != nil {
		return out, invalid("policies[%d].src_port: %v", i, err)
	}
	if out.sel.Dport, err = parsePortRange(p.GetDstPort()); err != nil {
		return out, invalid("policies[%d].dst_port: %v", i, err)
	}
	var srcFamily uint8
	if out.sel.Src.IsValid() {
		srcFamily = routeview.FamilyOf(out.sel.Src.Addr())
	}
	seenDst := make(map[netip.Prefix]int, len(p.GetRoutes()))
	for j, r := range p.GetRoutes() {
		parsed, err := parseRoute(r)
		if err != nil {
			return out, invalid("policies[%d].routes[%d].%v", i, j, err)
		}
		if srcFamily != 0 && parsed.family != srcFamily {
			return out, invalid("policies[%d].routes[%d].prefix: %s is not of the family of from %s", i, j, parsed.dst, out.sel.Src)
		}
		if first, ok := seenDst[parsed.dst]; ok {
			return out, invalid("policies[%d].routes[%d].prefix: %s already given in routes[%d]", i, j, parsed.dst, first)
		}
		seenDst[parsed.dst] = j
		out.routes = append(out.routes, parsed)
	}
	if len(out.routes) == 0 {
		out.routes = []route{defaultRoute(srcFamily)}
	}
	out.families = routeFamilies(out.routes)
	return out, nil
}

// defaultRoute is what a policy without routes gets: everything it selects leaves through the link.
// Without a source prefix the family is IPv4, as with sdk-kernel's iprule.
func defaultRoute(family uint8) route {
	if family == unix.AF_INET6 {
		return route{family: family, dst: netip.PrefixFrom(netip.IPv6Unspecified(), 0)}
	}
	return route{family: unix.AF_INET, dst: netip.PrefixFrom(netip.IPv4Unspecified(), 0)}
}

func routeFamilies(routes []route) []uint8 {
	var v4, v6 bool
	for _, r := range routes {
		v4 = v4 || r.family == unix.AF_INET
		v6 = v6 || r.family == unix.AF_INET6
	}
	var families []uint8
	if v4 {
		families = append(families, unix.AF_INET)
	}
	if v6 {
		families = append(families, unix.AF_INET6)
	}
	return families
}

func parseRoute(r *networkservice.Route) (route, error) {
	dst, err := parsePrefix(r.GetPrefix())
	if err != nil {
		return route{}, fmt.Errorf("prefix: %w", err)
	}
	out := route{family: routeview.FamilyOf(dst.Addr()), dst: dst}
	if r.GetNextHop() == "" {
		return out, nil
	}
	gw, err := netip.ParseAddr(r.GetNextHop())
	if err != nil || gw.Zone() != "" {
		return route{}, fmt.Errorf("next_hop: %q is not an IP address", r.GetNextHop())
	}
	gw = gw.Unmap()
	if routeview.FamilyOf(gw) != out.family {
		return route{}, fmt.Errorf("next_hop: %s is not of the family of prefix %s", gw, dst)
	}
	out.gw = gw
	return out, nil
}

// parsePrefix accepts a CIDR or a bare address (a host prefix) and returns the masked network.
func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		addr, err := netip.ParseAddr(s)
		if err != nil || addr.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix", s)
		}
		addr = addr.Unmap()
		return netip.PrefixFrom(addr, addr.BitLen()), nil
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix", s)
	}
	if prefix.Addr().Is4In6() {
		if prefix.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix", s)
		}
		prefix = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96)
	}
	return prefix.Masked(), nil
}

func parseProtocol(s string) (uint8, error) {
	if s == "" {
		return 0, nil
	}
	if n, ok := ipProtocolNumbers[strings.ToLower(s)]; ok {
		return uint8(n), nil
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is neither a protocol number 1-255 nor a known protocol name", s)
	}
	return uint8(n), nil
}

// parsePortRange accepts "port" or "start-end". The kernel rejects port 0 and 65535 in rule port ranges.
func parsePortRange(s string) (routeview.PortRange, error) {
	if s == "" {
		return routeview.PortRange{}, nil
	}
	startText, endText, isRange := strings.Cut(s, "-")
	if !isRange {
		endText = startText
	}
	start, errStart := strconv.ParseUint(startText, 10, 16)
	end, errEnd := strconv.ParseUint(endText, 10, 16)
	switch {
	case errStart != nil || errEnd != nil:
		return routeview.PortRange{}, fmt.Errorf("%q is not a port or a start-end port range", s)
	case start == 0 || end >= 0xffff || start > end:
		return routeview.PortRange{}, fmt.Errorf("%q must be within 1-65534 with start <= end", s)
	}
	return routeview.PortRange{Start: uint16(start), End: uint16(end)}, nil
}
