package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

const (
	settleTime = 10 * time.Second
	// forwarderRouteProtocol is the rtnetlink protocol value that marks the
	// rules and routes the forwarder owns.
	forwarderRouteProtocol = 250
)

// requireKernelMatches checks that ifname is the pod's only interface besides
// loopback, that it is up with exactly addrs, that the main table holds
// exactly routes, and that there is exactly one rule per policy, from its
// source, looking up a table of its own that holds exactly the policy's
// routes: what the IP context says, nothing more. These are outcome checks,
// for every forwarder.
func requireKernelMatches(t *testing.T, where string, state *topology.State, ifname string, addrs []string, routes []route, policies []*networkservice.PolicyRoute) {
	t.Helper()
	require.Equal(t, ifname, onlyNonLoopback(t, where, state))
	link, _ := state.Link(ifname)
	require.True(t, link.Up, "%s: %s is down\n%s", where, ifname, state)
	require.Equal(t, normalizePrefixes(t, addrs), normalizePrefixes(t, link.Addrs), "%s: addresses of %s\n%s", where, ifname, state)

	var want, got []string
	for _, r := range routes {
		want = append(want, r.String(ifname)+" table 254")
	}
	tables := policyTables(t, where, state, policies)
	for i, p := range policies {
		for _, r := range p.GetRoutes() {
			want = append(want, route{dst: netip.MustParsePrefix(r.GetPrefix()).Masked().String(), gw: r.GetNextHop()}.String(ifname)+
				fmt.Sprintf(" table %d", tables[i]))
		}
	}
	for _, r := range state.Routes {
		got = append(got, (route{dst: r.Dst, gw: r.Gw}).String(r.Link)+fmt.Sprintf(" table %d", r.Table))
	}
	sort.Strings(want)
	sort.Strings(got)
	require.Equal(t, want, got, "%s: routes\n%s", where, state)
}

// policyTables requires exactly one rule per policy (by source prefix),
// looking up a table of its own, and returns each policy's table.
func policyTables(t *testing.T, where string, state *topology.State, policies []*networkservice.PolicyRoute) []int {
	t.Helper()
	if len(policies) == 0 {
		require.Empty(t, state.Rules, "%s: no policy was asked for, yet there are rules\n%s", where, state)
		return nil
	}
	require.Len(t, state.Rules, len(policies), "%s: one rule per policy\n%s", where, state)
	tables := make([]int, len(policies))
	seen := map[int]bool{}
	for i, p := range policies {
		from := normalizePrefixes(t, []string{p.GetFrom()})[0]
		var matching []topology.Rule
		for _, r := range state.Rules {
			if r.Src == from {
				matching = append(matching, r)
			}
		}
		require.Len(t, matching, 1, "%s: rules from %s\n%s", where, from, state)
		rule := matching[0]
		require.NotContains(t, []int{0, 253, 254, 255}, rule.Table, "%s: the rule from %s looks up a reserved table\n%s", where, from, state)
		require.False(t, seen[rule.Table], "%s: two policies share table %d\n%s", where, rule.Table, state)
		seen[rule.Table] = true
		tables[i] = rule.Table
	}
	return tables
}

// ourDesign says whether the scenario also checks this project's own design
// choices, which the stock forwarder does not make and a user does not see
// (the protocol mark, identical rules across a restart, unregistering on
// SIGTERM): only when it runs this project's forwarder.
func ourDesign(d *domain.Domain) bool { return d.Forwarder().Ours }

// requireRulesMarked requires every rule of the pod to carry the forwarder's
// mark (design: ownership is recoverable from the kernel itself).
func requireRulesMarked(t *testing.T, where string, state *topology.State) {
	t.Helper()
	for _, rule := range state.Rules {
		require.Equal(t, forwarderRouteProtocol, rule.Protocol, "%s: the rule from %s does not carry the forwarder's mark\n%s", where, rule.Src, state)
	}
}

// onlyNonLoopback returns the single interface of a pod that is not lo.
func onlyNonLoopback(t *testing.T, where string, state *topology.State) string {
	t.Helper()
	var names []string
	for _, l := range state.Links {
		if l.Name != "lo" {
			names = append(names, l.Name)
		}
	}
	require.Len(t, names, 1, "%s should hold exactly one NSM interface\n%s", where, state)
	return names[0]
}

// route is a kernel route as the forwarder must install it.
type route struct{ dst, gw string }

func (r route) String(link string) string {
	if r.gw == "" {
		return fmt.Sprintf("%s dev %s", r.dst, link)
	}
	return fmt.Sprintf("%s via %s dev %s", r.dst, r.gw, link)
}

// clientRoutes and endpointRoutes are the routes NSM's kernel semantics
// derive from an IP context for each side: on-link routes to the peer's
// addresses, then the side's routes with the peer as next hop where none is
// given. A later route to the same prefix replaces an earlier one.
func clientRoutes(ipc *networkservice.IPContext) []route {
	return mergeRoutes(ipc.GetDstIPRoutes(), ipc.GetSrcRoutesWithExplicitNextHop())
}

func endpointRoutes(ipc *networkservice.IPContext) []route {
	return mergeRoutes(ipc.GetSrcIPRoutes(), ipc.GetDstRoutesWithExplicitNextHop())
}

func mergeRoutes(lists ...[]*networkservice.Route) []route {
	byDst := map[string]route{}
	var order []string
	for _, list := range lists {
		for _, r := range list {
			prefix := netip.MustParsePrefix(r.GetPrefix()).Masked().String()
			if _, seen := byDst[prefix]; !seen {
				order = append(order, prefix)
			}
			byDst[prefix] = route{dst: prefix, gw: r.GetNextHop()}
		}
	}
	routes := make([]route, 0, len(order))
	for _, dst := range order {
		routes = append(routes, byDst[dst])
	}
	return routes
}

func normalizePrefixes(t *testing.T, prefixes []string) []string {
	t.Helper()
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		parsed, err := netip.ParsePrefix(p)
		require.NoError(t, err)
		out = append(out, parsed.String())
	}
	sort.Strings(out)
	return out
}

func addrOf(t *testing.T, cidr string) string {
	t.Helper()
	prefix, err := netip.ParsePrefix(cidr)
	require.NoError(t, err)
	return prefix.Addr().String()
}

// waitFor polls done every interval for settleTime and fails the test with
// describe's account of the last state seen when it never says yes.
func waitFor(t *testing.T, interval time.Duration, done func() bool, describe func() string) {
	t.Helper()
	waitUntil(t, time.Now().Add(settleTime), interval, done, describe)
}

// waitUntil is waitFor with a deadline of the caller's.
func waitUntil(t *testing.T, deadline time.Time, interval time.Duration, done func() bool, describe func() string) {
	t.Helper()
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal(describe())
		}
		time.Sleep(interval)
	}
}

// requireEventuallyEmpty waits until a pod is back to a fresh namespace:
// loopback only, no routes, no rules.
func requireEventuallyEmpty(t *testing.T, where, netns string) {
	t.Helper()
	var state *topology.State
	var err error
	waitFor(t, 100*time.Millisecond, func() bool {
		state, err = topology.Inspect(netns)
		return err == nil && isPristine(state)
	}, func() string {
		return fmt.Sprintf("%s still holds NSM state after Close (%v)\n%s", where, err, state)
	})
}

func isPristine(s *topology.State) bool {
	if len(s.Routes) > 0 || len(s.Rules) > 0 || len(s.Links) != 1 {
		return false
	}
	lo := s.Links[0]
	if lo.Name != "lo" {
		return false
	}
	for _, a := range lo.Addrs {
		if a != "127.0.0.1/8" && a != "::1/128" {
			return false
		}
	}
	return true
}

// requireVPPClean waits until node's VPP has exactly the interfaces it had
// before any connection.
func requireVPPClean(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) {
	t.Helper()
	var now []domain.VPPInterface
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		now, err = d.VPPInterfaces(ctx, node)
		return err == nil && sameInterfaces(now, node.IdleInterfaces)
	}, func() string {
		return fmt.Sprintf("%s: %s interfaces after Close %v (error %v), before any connection %v", node.Name, d.VPPName(), now, err, node.IdleInterfaces)
	})
}

// requireVPPHolds requires node's VPP to have an interface of kind.
func requireVPPHolds(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, kind string) {
	t.Helper()
	interfaces, err := d.VPPInterfaces(ctx, node)
	require.NoError(t, err)
	for _, i := range interfaces {
		if i.Kind == kind {
			return
		}
	}
	t.Fatalf("%s: no %s interface in %s: %v", node.Name, kind, d.VPPName(), interfaces)
}

func sameInterfaces(a, b []domain.VPPInterface) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// requireNodeKernelClean waits until node's namespace holds exactly the
// links, addresses, routes and rules it had before any connection: the
// node-side ends of veth pairs included.
func requireNodeKernelClean(t *testing.T, node *domain.Node) {
	t.Helper()
	var now *topology.State
	var err error
	waitFor(t, 100*time.Millisecond, func() bool {
		now, err = topology.Inspect(node.Netns)
		return err == nil && reflect.DeepEqual(now, node.IdleKernel)
	}, func() string {
		return fmt.Sprintf("%s: kernel state after Close (error %v):\n%s\nbefore any connection:\n%s", node.Name, err, now, node.IdleKernel)
	})
}

// requireEventuallyUnregistered waits until the registry no longer lists name.
func requireEventuallyUnregistered(ctx context.Context, t *testing.T, d *domain.Domain, name string) {
	t.Helper()
	var records []domain.EndpointRecord
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		records, err = d.Endpoints(ctx)
		if err != nil {
			return false
		}
		for _, r := range records {
			if r.Name == name {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("%s is still registered (%v): %v", name, err, records)
	})
}
