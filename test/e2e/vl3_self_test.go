package e2e_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// An endpoint with a VPP of its own connects to itself, as upstream's cmd-nse-vl3-vpp: a kernel
// connection of its own service, through its nsmgr and forwarder, into its pod. That gives the
// pod an address in the vl3 network (vl3-dual-stack's endpoints ping from it), where its DNS
// server listens and which its own name points at (vl3-dns).

// requireEndpointsConnectedToThemselves requires each endpoint's pod to hold one interface
// besides lo, with one address of each family of the network, of that endpoint's own prefix
// but not the endpoint's address, and keeps those addresses for the name checks.
func (r *vl3Run) requireEndpointsConnectedToThemselves(t *testing.T) {
	t.Helper()
	r.selfAddrs = map[string][]string{}
	for _, e := range r.endpoints {
		state, err := topology.Inspect(e.Pod.Netns)
		require.NoError(t, err)
		var links []topology.Link
		for _, link := range state.Links {
			if link.Name != "lo" {
				links = append(links, link)
			}
		}
		require.Len(t, links, 1, "%s's pod: one interface of its connection to itself, got %v", e.Name, state.Links)
		endpointAddrs := vl3EndpointAddrs(t, e)
		require.Len(t, links[0].Addrs, len(endpointAddrs), "%s's pod: %s's addresses", e.Name, links[0].Name)
		var addrs []string
		for i, cidr := range links[0].Addrs {
			addr := netip.MustParsePrefix(cidr).Addr()
			own := netip.MustParseAddr(endpointAddrs[i])
			require.NotEqual(t, own, addr, "%s's pod: the address of its connection to itself", e.Name)
			require.True(t, ownPrefix(own).Contains(addr),
				"%s's pod: %s, not of the endpoint's own prefix %s", e.Name, addr, ownPrefix(own))
			addrs = append(addrs, addr.String())
		}
		r.selfAddrs[e.Name] = addrs
	}
}

// ownPrefix is the prefix an endpoint of address own took from its IPAM server: the examples'
// /24s of 172.16.0.0/16, /112s of 2001:db8::/64.
func ownPrefix(own netip.Addr) netip.Prefix {
	bits := 24
	if own.Is6() {
		bits = 112
	}
	return netip.PrefixFrom(own, bits).Masked()
}

// endpointNameAddr is the address the endpoint's DNS name must resolve to: its connection to
// itself where it has one, as upstream's, its own address otherwise.
func (r *vl3Run) endpointNameAddr(t *testing.T, name string) string {
	t.Helper()
	if r.selfAddrs == nil {
		for _, e := range r.endpoints {
			if e.Name == name {
				return vl3EndpointAddrs(t, e)[0]
			}
		}
		require.FailNow(t, fmt.Sprintf("no vl3 endpoint %s", name))
	}
	addrs, ok := r.selfAddrs[name]
	require.True(t, ok, "%s's connection to itself was not checked", name)
	return addrs[0]
}
