package main

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
)

// A dual-stack NSM_CIDR_PREFIX gives each side one address of each family, as
// cmd-nse-icmp-responder does; an IPv4 list alone gives IPv4 only.
func TestEveryFamilyOfTheCIDRListGetsAnAddress(t *testing.T) {
	for _, tc := range []struct {
		cidrs      []string
		v4, v6     int
		clientAddr []string
	}{
		{[]string{"172.16.1.100/31", "2001:db8::/116"}, 1, 1, []string{"172.16.1.101/32", "2001:db8::1/128"}},
		{[]string{"172.16.1.100/31"}, 1, 0, []string{"172.16.1.101/32"}},
		{[]string{"2001:db8::/116"}, 0, 1, []string{"2001:db8::1/128"}},
	} {
		var prefixes []*net.IPNet
		for _, cidr := range tc.cidrs {
			_, prefix, err := net.ParseCIDR(cidr)
			require.NoError(t, err)
			prefixes = append(prefixes, prefix)
		}
		server := chain.NewNetworkServiceServer(ipamByFamily(prefixes)...)
		conn, err := server.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{Id: "nsc-0"}})
		require.NoError(t, err, "%v", tc.cidrs)
		ipc := conn.GetContext().GetIpContext()
		for _, addrs := range [][]string{ipc.GetSrcIpAddrs(), ipc.GetDstIpAddrs()} {
			v4, v6 := 0, 0
			for _, a := range addrs {
				if netip.MustParsePrefix(a).Addr().Is4() {
					v4++
				} else {
					v6++
				}
			}
			require.Equal(t, [2]int{tc.v4, tc.v6}, [2]int{v4, v6}, "%v: IPv4 and IPv6 addresses of one side: %v", tc.cidrs, addrs)
		}
		require.ElementsMatch(t, tc.clientAddr, ipc.GetSrcIpAddrs(), "%v", tc.cidrs)
	}
}
