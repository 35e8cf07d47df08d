package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/cidr"
)

// NSM_CIDR_PREFIX as cmd-nse-icmp-responder reads it: each comma-separated group gives every
// client an address, a bracketed group one address from the first of its prefixes with room.
func TestEachCIDRGroupGivesEveryClientAnAddress(t *testing.T) {
	for _, tc := range []struct {
		value    string
		src, dst [][]string // per client
	}{
		{value: "172.16.1.100/30,172.16.2.200/30",
			src: [][]string{{"172.16.1.101/32", "172.16.2.201/32"}, {"172.16.1.103/32", "172.16.2.203/32"}},
			dst: [][]string{{"172.16.1.100/32", "172.16.2.200/32"}, {"172.16.1.102/32", "172.16.2.202/32"}}},
		{value: "172.16.1.100/31,2001:db8::/116",
			src: [][]string{{"172.16.1.101/32", "2001:db8::1/128"}},
			dst: [][]string{{"172.16.1.100/32", "2001:db8::/128"}}},
		{value: "[172.16.1.100/31,172.16.2.200/31]",
			src: [][]string{{"172.16.1.101/32"}, {"172.16.2.201/32"}},
			dst: [][]string{{"172.16.1.100/32"}, {"172.16.2.200/32"}}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			var groups cidr.Groups
			require.NoError(t, groups.Decode(tc.value))
			ipam, err := addressing("polite", groups, nil)
			require.NoError(t, err)
			for i := range tc.src {
				conn, err := ipam.Request(context.Background(), &networkservice.NetworkServiceRequest{
					Connection: &networkservice.Connection{Id: string(rune('a' + i))},
				})
				require.NoError(t, err)
				require.Equal(t, tc.src[i], conn.GetContext().GetIpContext().GetSrcIpAddrs(), "client %d", i+1)
				require.Equal(t, tc.dst[i], conn.GetContext().GetIpContext().GetDstIpAddrs(), "client %d", i+1)
			}
		})
	}
}

// A client healing from another endpoint brings that endpoint's addresses and routes in its
// request (features/ipam-policies: 172.16.1.0/29 before, 172.16.2.0/29 now). The polite policy
// keeps them beside the new ones; the strict one leaves only what its own prefixes gave.
func TestStrictPolicyDropsAddressesFromOutsideItsPrefixes(t *testing.T) {
	healing := func() *networkservice.NetworkServiceRequest {
		return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
			Id: "healing",
			Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
				SrcIpAddrs: []string{"172.16.1.1/32"},
				DstIpAddrs: []string{"172.16.1.0/32"},
				SrcRoutes:  []*networkservice.Route{{Prefix: "172.16.1.0/32"}},
				DstRoutes:  []*networkservice.Route{{Prefix: "172.16.1.1/32"}},
			}},
		}}
	}
	routes := func(rs []*networkservice.Route) (prefixes []string) {
		for _, r := range rs {
			prefixes = append(prefixes, r.GetPrefix())
		}
		return prefixes
	}
	for _, tc := range []struct {
		policy   string
		src, dst []string
	}{
		{policy: "polite", src: []string{"172.16.1.1/32", "172.16.2.1/32"}, dst: []string{"172.16.1.0/32", "172.16.2.0/32"}},
		{policy: "strict", src: []string{"172.16.2.1/32"}, dst: []string{"172.16.2.0/32"}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			var groups cidr.Groups
			require.NoError(t, groups.Decode("172.16.2.0/29"))
			ipam, err := addressing(tc.policy, groups, nil)
			require.NoError(t, err)
			conn, err := ipam.Request(context.Background(), healing())
			require.NoError(t, err)
			ipc := conn.GetContext().GetIpContext()
			require.Equal(t, tc.src, ipc.GetSrcIpAddrs())
			require.Equal(t, tc.dst, ipc.GetDstIpAddrs())
			require.ElementsMatch(t, tc.dst, routes(ipc.GetSrcRoutes()), "the client's routes")
			require.ElementsMatch(t, tc.src, routes(ipc.GetDstRoutes()), "the endpoint's routes")
		})
	}
}

func TestUnknownIPAMPolicyIsRefusedNamingTheVariable(t *testing.T) {
	var groups cidr.Groups
	require.NoError(t, groups.Decode("172.16.2.0/29"))
	_, err := addressing("lenient", groups, nil)
	require.ErrorContains(t, err, "NSM_IPAM_POLICY")
}
