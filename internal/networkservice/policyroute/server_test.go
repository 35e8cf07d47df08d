package policyroute

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
)

func TestInstallIsIdempotent(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	m := newMonitor(t, n, o)
	server := newChain()

	req := newRequest(n, "conn-1", "nsm0",
		&networkservice.PolicyRoute{From: "172.16.0.1/32", Proto: "tcp", DstPort: "8000-8080", Routes: []*networkservice.Route{
			{Prefix: "10.1.0.0/16", NextHop: "172.16.0.2"}, {Prefix: "10.2.0.0/16"}}},
		&networkservice.PolicyRoute{From: "fd00::1/128", Proto: "17", SrcPort: "53"},
	)
	request(t, server, req)
	events := m.take(t)
	require.Equal(t, 2, countEvents(events, "newrule"), events)
	require.Equal(t, 3, countEvents(events, "newroute"), events)

	state := n.snapshot(t, o)
	require.Len(t, state, 5, state)
	for _, entry := range state {
		require.Contains(t, entry, fmt.Sprintf("proto %d", o.protocol), "every rule and route carries our mark")
	}

	request(t, server, req)
	require.Empty(t, m.take(t))
	require.Equal(t, state, n.snapshot(t, o))
}

func manyPolicies(count int) []*networkservice.PolicyRoute {
	policies := make([]*networkservice.PolicyRoute, 0, count)
	for i := range count {
		policies = append(policies, &networkservice.PolicyRoute{
			From:    fmt.Sprintf("172.16.%d.%d/32", i/250, i%250+1),
			Proto:   "17",
			DstPort: fmt.Sprintf("%d", 1000+i%60000),
			Routes:  []*networkservice.Route{{Prefix: fmt.Sprintf("10.%d.%d.0/24", i/250, i%250), NextHop: "172.16.255.1"}},
		})
	}
	return policies
}

func TestRestartWithIntactStateWritesNothing(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	m := newMonitor(t, n, o)
	req := newRequest(n, "conn-1", "nsm0", manyPolicies(50)...)
	req.GetConnection().GetContext().GetIpContext().Policies = append(req.GetConnection().GetContext().GetIpContext().Policies,
		&networkservice.PolicyRoute{From: "fd00::1/128", Routes: []*networkservice.Route{{Prefix: "fd01::/64", NextHop: "fd00::2"}}},
		&networkservice.PolicyRoute{Proto: "icmp"})

	request(t, newChain(), req)
	events := m.take(t)
	require.Equal(t, 52, countEvents(events, "newrule"), events)
	require.Equal(t, 52, countEvents(events, "newroute"), events)
	before := n.snapshot(t, o)

	// A new server is a restarted forwarder: no memory, only the kernel.
	request(t, newChain(), req)
	require.Empty(t, m.take(t), "a restart with intact state must not write")
	require.Equal(t, before, n.snapshot(t, o))
}

func TestChangedNextHopIsReplacedInPlace(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	m := newMonitor(t, n, o)
	server := newChain()
	policy := &networkservice.PolicyRoute{From: "172.16.0.1/32", Routes: []*networkservice.Route{
		{Prefix: "10.1.0.0/16", NextHop: "172.16.0.2"}, {Prefix: "10.2.0.0/16", NextHop: "172.16.0.2"}}}
	request(t, server, newRequest(n, "conn-1", "nsm0", policy))
	m.take(t)
	table := o.candidateTables("conn-1", selector{Src: netip.MustParsePrefix("172.16.0.1/32")})[0]

	policy.Routes[0].NextHop = "172.16.0.3"
	request(t, newChain(), newRequest(n, "conn-1", "nsm0", policy))
	events := m.take(t)
	require.Equal(t, []string{fmt.Sprintf("newroute table %d", table)}, events, "only the changed route is written")

	routes, err := n.handle.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: int(table)}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	require.Len(t, routes, 2)
	gateways := map[string]string{}
	for _, r := range routes {
		gateways[r.Dst.String()] = r.Gw.String()
	}
	require.Equal(t, map[string]string{"10.1.0.0/16": "172.16.0.3", "10.2.0.0/16": "172.16.0.2"}, gateways)
}

func TestRemovedPolicyLosesRuleAndRoutes(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	keep := &networkservice.PolicyRoute{From: "172.16.0.1/32", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16"}}}
	drop := &networkservice.PolicyRoute{From: "172.16.0.1/32", Proto: "tcp", Routes: []*networkservice.Route{{Prefix: "10.2.0.0/16"}, {Prefix: "10.3.0.0/16"}}}

	request(t, newChain(), newRequest(n, "conn-1", "nsm0", keep))
	onlyKept := n.snapshot(t, o)

	server := newChain()
	request(t, server, newRequest(n, "conn-1", "nsm0", keep, drop))
	require.Len(t, n.snapshot(t, o), len(onlyKept)+3)

	m := newMonitor(t, n, o)
	request(t, newChain(), newRequest(n, "conn-1", "nsm0", keep))
	events := m.take(t)
	require.Equal(t, 1, countEvents(events, "delrule"), events)
	require.Equal(t, 2, countEvents(events, "delroute"), events)
	require.Len(t, events, 3, events)
	require.Equal(t, onlyKept, n.snapshot(t, o))
}

func TestRecreatedInterfaceGetsRoutesBack(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	req := newRequest(n, "conn-1", "nsm0",
		&networkservice.PolicyRoute{From: "172.16.0.1/32", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16", NextHop: "172.16.0.2"}}},
		&networkservice.PolicyRoute{From: "fd00::1/128"})
	request(t, newChain(), req)
	before := n.snapshot(t, o)

	n.delLink(t, "nsm0")
	require.NotEqual(t, before, n.snapshot(t, o), "the kernel drops routes of a deleted link")
	n.addLink(t, "nsm0")

	m := newMonitor(t, n, o)
	request(t, newChain(), req)
	events := m.take(t)
	require.Equal(t, 2, countEvents(events, "newroute"), events)
	require.Len(t, events, 2, "rules survived the link and are adopted")
	require.Equal(t, before, n.snapshot(t, o))
}

func TestCandidateTablesArePureAndInRange(t *testing.T) {
	o := newOptions([]Option{WithTableRange(1, 252)})
	sel := selector{Src: netip.MustParsePrefix("172.16.0.1/32"), Proto: 6}
	first := o.candidateTables("conn-1", sel)
	require.Equal(t, first, newOptions([]Option{WithTableRange(1, 252)}).candidateTables("conn-1", sel))
	require.NotEqual(t, first, o.candidateTables("conn-2", sel))
	require.Len(t, first, defaultProbeLimit)
	for _, table := range first {
		require.True(t, table >= 1 && table <= 252, "table %d", table)
	}
}
