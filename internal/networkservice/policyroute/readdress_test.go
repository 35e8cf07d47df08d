package policyroute

import (
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

// addressedPolicies are a connection's policies from its IPv4 and IPv6 addresses, as a client configures
// them for the addresses its endpoint handed out.
func addressedPolicies(v4, v6 string) []*networkservice.PolicyRoute {
	return []*networkservice.PolicyRoute{
		{From: v4 + "/32", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16", NextHop: "172.16.0.254"}}},
		{From: v6 + "/128", Routes: []*networkservice.Route{{Prefix: "fd01::/64", NextHop: "fd00::fe"}}},
	}
}

// readdress replaces the link's addresses as sdk-kernel's ipaddress element does, before the policy element
// runs: old ones out first. Removing the last IPv4 address makes the kernel drop every IPv4 route through the
// link, in every table, without a notification.
func (n *testNS) readdress(t *testing.T, name string, from, to []string) {
	t.Helper()
	link, err := n.handle.LinkByName(name)
	require.NoError(t, err)
	for _, cidr := range from {
		addr, err := netlink.ParseAddr(cidr)
		require.NoError(t, err)
		require.NoError(t, n.handle.AddrDel(link, addr))
	}
	for _, cidr := range to {
		addr, err := netlink.ParseAddr(cidr)
		require.NoError(t, err)
		addr.Flags = 0x80 | 0x02 // permanent, nodad
		require.NoError(t, n.handle.AddrAdd(link, addr))
	}
}

// When a refresh hands the connection new addresses, its policy rules from the old addresses go, whether the
// forwarder kept its memory in between or restarted, and a later Close leaves nothing.
func TestAddressChangeLeavesNoRuleOfTheOldAddresses(t *testing.T) {
	for _, restart := range []string{"same instance", "restart before the refresh", "restart before the close"} {
		t.Run(restart, func(t *testing.T) {
			n := newTestNS(t)
			n.addLink(t, "nsm0")
			o := newOptions(nil)
			oldAddrs, newAddrs := []string{"172.16.0.1/32", "fd00::1/128"}, []string{"172.16.0.5/32", "fd00::5/128"}
			n.readdress(t, "nsm0", nil, oldAddrs)
			first := newChain()
			request(t, first, newRequest(n, "conn-1", "nsm0", addressedPolicies("172.16.0.1", "fd00::1")...))

			want := newTestNS(t)
			want.addLink(t, "nsm0")
			request(t, newChain(), newRequest(want, "conn-1", "nsm0", addressedPolicies("172.16.0.5", "fd00::5")...))

			refreshing, closing := first, first
			switch restart {
			case "restart before the refresh":
				refreshing, closing = newChain(), newChain()
			case "restart before the close":
				closing = newChain()
			}
			n.readdress(t, "nsm0", oldAddrs, newAddrs)
			conn := request(t, refreshing, newRequest(n, "conn-1", "nsm0", addressedPolicies("172.16.0.5", "fd00::5")...))
			require.Equal(t, routingByLink(t, want, o), routingByLink(t, n, o), "exactly the new context's rules and routes")
			require.Len(t, n.snapshot(t, o), len(want.snapshot(t, o)))

			_, err := closing.Close(quietContext(), conn)
			require.NoError(t, err)
			require.Empty(t, n.snapshot(t, o), "Close leaves no rule or route of either context")
		})
	}
}
