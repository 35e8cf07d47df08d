package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

func TestPoliciesOnePerSelector(t *testing.T) {
	p := &policyRoutes{}
	for _, entry := range []string{"198.51.100.0/24", "192.0.2.0/25", "192.0.2.128/25@6:5201", "2001:db8::/64"} {
		e, err := parsePolicyEntry(entry)
		require.NoError(t, err)
		p.entries = append(p.entries, e)
	}
	policies := p.policiesFor(&networkservice.IPContext{SrcIpAddrs: []string{"172.16.100.1/32"}, DstIpAddrs: []string{"172.16.100.0/32"}})
	require.Equal(t, []*networkservice.PolicyRoute{
		{From: "172.16.100.1/32", Routes: []*networkservice.Route{
			{Prefix: "198.51.100.0/24", NextHop: "172.16.100.0"}, {Prefix: "192.0.2.0/25", NextHop: "172.16.100.0"},
		}},
		{From: "172.16.100.1/32", Proto: "6", DstPort: "5201", Routes: []*networkservice.Route{{Prefix: "192.0.2.128/25", NextHop: "172.16.100.0"}}},
	}, policies, "the IPv6 prefix has no IPv6 client address to start from")
}

func TestPolicyEntryErrorsNameTheEntry(t *testing.T) {
	for _, entry := range []string{"192.0.2.0", "192.0.2.0/24@tcp:80", "192.0.2.0/24@6", "192.0.2.0/24@6:x"} {
		_, err := parsePolicyEntry(entry)
		require.ErrorContains(t, err, entry)
	}
}
