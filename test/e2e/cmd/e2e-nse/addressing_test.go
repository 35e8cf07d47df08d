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
			ipam := addressing(groups, nil)
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
