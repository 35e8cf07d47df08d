package policyroute

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// healPair is two connections into one namespace that share a policy selector.
func healPair(n *testNS, idA, idB string) (a, b *networkservice.NetworkServiceRequest) {
	shared := func(nextHop string) *networkservice.PolicyRoute {
		return &networkservice.PolicyRoute{Proto: "tcp", DstPort: "443", Routes: []*networkservice.Route{{Prefix: "10.0.0.0/8", NextHop: nextHop}}}
	}
	a = newRequest(n, idA, "nsm0", shared("172.16.0.2"),
		&networkservice.PolicyRoute{From: "fd00::1/128", Routes: []*networkservice.Route{{Prefix: "fd01::/64", NextHop: "fd00::2"}}})
	b = newRequest(n, idB, "nsm1", shared("172.16.1.2"), &networkservice.PolicyRoute{From: "172.16.1.1/32"})
	return a, b
}

// heal runs the Requests of a restarted forwarder: in the given order, or all at once when parallel.
func heal(t *testing.T, server networkservice.NetworkServiceServer, parallel bool, reqs ...*networkservice.NetworkServiceRequest) {
	if !parallel {
		for _, req := range reqs {
			request(t, server, req)
		}
		return
	}
	var wg sync.WaitGroup
	errs := make([]error, len(reqs))
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = server.Request(quietContext(), req)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestHealsAfterRestartWithRecreatedLinksConverge(t *testing.T) {
	for _, order := range []string{"a-then-b", "b-then-a", "parallel"} {
		t.Run(order, func(t *testing.T) {
			n := newTestNS(t)
			n.addLink(t, "nsm0")
			n.addLink(t, "nsm1")
			o := newOptions(nil)
			a, b := healPair(n, "conn-a", "conn-b")
			heal(t, newChain(), false, a, b)
			want := n.snapshot(t, o)

			n.delLink(t, "nsm0")
			n.delLink(t, "nsm1")
			n.addLink(t, "nsm0")
			n.addLink(t, "nsm1")

			restarted := newChain()
			switch order {
			case "a-then-b":
				heal(t, restarted, false, a, b)
			case "b-then-a":
				heal(t, restarted, false, b, a)
			default:
				heal(t, restarted, true, a, b)
			}
			require.Equal(t, want, n.snapshot(t, o))
		})
	}
}

// collidingIDs finds two connection IDs whose first candidate table for sel is the same.
func collidingIDs(o *options, sel selector) (string, string) {
	for i := 0; ; i++ {
		a, b := fmt.Sprintf("conn-a-%d", i), fmt.Sprintf("conn-b-%d", i)
		if o.candidateTables(a, sel)[0] == o.candidateTables(b, sel)[0] {
			return a, b
		}
	}
}

// routingByLink describes, per link, which selectors route where, without table numbers: what traffic sees.
func routingByLink(t *testing.T, n *testNS, o *options) map[string][]string {
	rules, err := n.handle.RuleList(netlink.FAMILY_ALL)
	require.NoError(t, err)
	out := map[string][]string{}
	tables := map[uint32]bool{}
	for i := range rules {
		if rules[i].Protocol != o.protocol {
			continue
		}
		table := uint32(rules[i].Table)
		require.False(t, tables[table], "two rules share table %d", table)
		tables[table] = true
		routes, err := n.handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: int(table)}, netlink.RT_FILTER_TABLE)
		require.NoError(t, err)
		require.NotEmpty(t, routes, "rule %s points at an empty table", ruleString(&rules[i]))
		for j := range routes {
			l, err := n.handle.LinkByIndex(routes[j].LinkIndex)
			require.NoError(t, err)
			out[l.Attrs().Name] = append(out[l.Attrs().Name], fmt.Sprintf("from %v ipproto %d dport %v -> %s via %v", rules[i].Src, rules[i].IPProto, rules[i].Dport, routes[j].Dst, routes[j].Gw))
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func TestCollidingTablesResolveInEitherOrder(t *testing.T) {
	for _, order := range []string{"a-then-b", "b-then-a", "parallel"} {
		t.Run(order, func(t *testing.T) {
			n := newTestNS(t)
			n.addLink(t, "nsm0")
			n.addLink(t, "nsm1")
			opts := []Option{WithTableRange(5000, 3)}
			o := newOptions(opts)
			idA, idB := collidingIDs(o, selector{Proto: 6, Dport: routeview.PortRange{Start: 443, End: 443}})
			a, b := healPair(n, idA, idB)
			a.GetConnection().GetContext().GetIpContext().Policies = a.GetConnection().GetContext().GetIpContext().Policies[:1]
			b.GetConnection().GetContext().GetIpContext().Policies = b.GetConnection().GetContext().GetIpContext().Policies[:1]

			heal(t, newChain(opts...), false, a, b)
			want := routingByLink(t, n, o)
			require.Len(t, want, 2)

			n.delLink(t, "nsm0")
			n.delLink(t, "nsm1")
			n.addLink(t, "nsm0")
			n.addLink(t, "nsm1")
			restarted := newChain(opts...)
			switch order {
			case "a-then-b":
				heal(t, restarted, false, a, b)
			case "b-then-a":
				heal(t, restarted, false, b, a)
			default:
				heal(t, restarted, true, a, b)
			}
			require.Equal(t, want, routingByLink(t, n, o))
			rules, err := n.handle.RuleList(netlink.FAMILY_V4)
			require.NoError(t, err)
			marked := 0
			for i := range rules {
				if rules[i].Protocol == o.protocol {
					marked++
				}
			}
			require.Equal(t, 2, marked, "one rule per connection, no leftovers")
		})
	}
}
