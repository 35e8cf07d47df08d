package topology

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Link is one interface as the kernel reports it.
type Link struct {
	Name  string
	Type  string
	Up    bool
	Alias string
	// Addrs are global addresses in CIDR form; link-local IPv6 addresses the
	// kernel adds by itself are left out.
	Addrs []string
}

// Route is a route that someone installed: kernel-generated routes
// (connected subnets, the local table) are left out.
type Route struct {
	Table    int
	Dst      string
	Gw       string
	Link     string
	Protocol int
}

// Rule is one ip rule beyond the kernel's defaults.
type Rule struct {
	Priority int
	Src      string
	Table    int
	// Protocol is who installed the rule (rtnetlink protocol attribute).
	Protocol int
	// IPProto and DstPort are the rule's ipproto and dport selectors ("5201",
	// "5000-5100"), zero and empty when it has none.
	IPProto int
	DstPort string
}

// State is what a namespace holds.
type State struct {
	Links  []Link
	Routes []Route
	Rules  []Rule
}

// Inspect reads the state of the named namespace.
func Inspect(netnsName string) (*State, error) {
	ns, err := netns.GetFromName(netnsName)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", netnsName, err)
	}
	defer func() { _ = ns.Close() }()
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", netnsName, err)
	}
	defer handle.Close()

	state := &State{}
	links, err := handle.LinkList()
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, l := range links {
		attrs := l.Attrs()
		names[attrs.Index] = attrs.Name
		link := Link{Name: attrs.Name, Type: l.Type(), Up: attrs.Flags&net.FlagUp != 0, Alias: attrs.Alias}
		addrs, addrErr := handle.AddrList(l, netlink.FAMILY_ALL)
		if addrErr != nil {
			return nil, addrErr
		}
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() && a.IP.To4() == nil {
				continue
			}
			link.Addrs = append(link.Addrs, a.IPNet.String())
		}
		sort.Strings(link.Addrs)
		state.Links = append(state.Links, link)
	}
	// Only unicast families: the multicast-routing families (RTNL_FAMILY_IPMR
	// and IP6MR) carry default rules of their own that nobody installs.
	var routes []netlink.Route
	var rules []netlink.Rule
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		familyRoutes, routeErr := handle.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if routeErr != nil {
			return nil, routeErr
		}
		routes = append(routes, familyRoutes...)
		familyRules, ruleErr := handle.RuleList(family)
		if ruleErr != nil {
			return nil, ruleErr
		}
		rules = append(rules, familyRules...)
	}
	for _, r := range routes {
		if r.Protocol == unix.RTPROT_KERNEL || r.Table == unix.RT_TABLE_LOCAL || r.Type == unix.RTN_MULTICAST {
			continue
		}
		route := Route{Table: r.Table, Link: names[r.LinkIndex], Protocol: int(r.Protocol)}
		if r.Dst != nil {
			route.Dst = r.Dst.String()
		}
		if r.Gw != nil {
			route.Gw = r.Gw.String()
		}
		state.Routes = append(state.Routes, route)
	}
	for _, r := range rules {
		if isDefaultRule(r) {
			continue
		}
		rule := Rule{Priority: r.Priority, Table: r.Table, Protocol: int(r.Protocol)}
		if r.Src != nil {
			rule.Src = r.Src.String()
		}
		rule.IPProto = r.IPProto
		if r.Dport != nil {
			rule.DstPort = strconv.Itoa(int(r.Dport.Start))
			if r.Dport.End != r.Dport.Start {
				rule.DstPort += "-" + strconv.Itoa(int(r.Dport.End))
			}
		}
		state.Rules = append(state.Rules, rule)
	}
	return state, nil
}

// isDefaultRule matches the rules every new namespace starts with.
func isDefaultRule(r netlink.Rule) bool {
	return r.Src == nil && r.Dst == nil && r.Mark == 0 && r.IifName == "" && r.OifName == "" &&
		(r.Priority == 0 && r.Table == unix.RT_TABLE_LOCAL ||
			r.Priority == 32766 && r.Table == unix.RT_TABLE_MAIN ||
			r.Priority == 32767 && r.Table == unix.RT_TABLE_DEFAULT)
}

// selectors renders the rule's ipproto and dport selectors as ip rule shows them.
func (r Rule) selectors() string {
	var out string
	if r.IPProto != 0 {
		out += fmt.Sprintf(" ipproto %d", r.IPProto)
	}
	if r.DstPort != "" {
		out += " dport " + r.DstPort
	}
	return out
}

// Link returns the link named name, if any.
func (s *State) Link(name string) (Link, bool) {
	for _, l := range s.Links {
		if l.Name == name {
			return l, true
		}
	}
	return Link{}, false
}

// RoutesVia are the routes through the named link.
func (s *State) RoutesVia(name string) []Route {
	var routes []Route
	for _, r := range s.Routes {
		if r.Link == name {
			routes = append(routes, r)
		}
	}
	return routes
}

// String renders the state the way a person reads `ip addr; ip route; ip rule`.
func (s *State) String() string {
	var b strings.Builder
	for _, l := range s.Links {
		state := "down"
		if l.Up {
			state = "up"
		}
		fmt.Fprintf(&b, "  link %s (%s, %s)", l.Name, l.Type, state)
		if l.Alias != "" {
			fmt.Fprintf(&b, " alias %q", l.Alias)
		}
		if len(l.Addrs) > 0 {
			fmt.Fprintf(&b, " %s", strings.Join(l.Addrs, " "))
		}
		b.WriteString("\n")
	}
	for _, r := range s.Routes {
		dst := r.Dst
		if dst == "" {
			dst = "default"
		}
		fmt.Fprintf(&b, "  route table %d %s", r.Table, dst)
		if r.Gw != "" {
			fmt.Fprintf(&b, " via %s", r.Gw)
		}
		fmt.Fprintf(&b, " dev %s proto %d\n", r.Link, r.Protocol)
	}
	for _, r := range s.Rules {
		fmt.Fprintf(&b, "  rule %d from %s%s lookup %d proto %d\n", r.Priority, r.Src, r.selectors(), r.Table, r.Protocol)
	}
	return b.String()
}
