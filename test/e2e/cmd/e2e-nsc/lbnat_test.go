package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheRulesetSpreadsNewFlowsOverTheServersAndAnswersFromTheVIP(t *testing.T) {
	nat := natBalancer{vip: net.ParseIP("172.16.0.3"), protocol: "tcp", port: 8080, targetPort: 8081}
	got := nat.ruleset([]net.IP{net.ParseIP("172.16.0.2"), net.ParseIP("172.16.1.2")})
	require.Equal(t, `table ip nsm-vl3-lb {}
delete table ip nsm-vl3-lb
table ip nsm-vl3-lb {
	chain balance {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr 172.16.0.3 tcp dport 8080 dnat ip addr . port to numgen random mod 2 map { 0 : 172.16.0.2 . 8081, 1 : 172.16.1.2 . 8081 }
	}
	chain answer {
		type nat hook postrouting priority srcnat; policy accept;
		ct status dnat ip daddr { 172.16.0.2, 172.16.1.2 } tcp dport 8081 snat ip to 172.16.0.3
	}
}
`, got)
}

func TestWithoutServersTheTableGoes(t *testing.T) {
	nat := natBalancer{vip: net.ParseIP("172.16.0.3"), protocol: "udp", port: 53, targetPort: 5353}
	require.Equal(t, "table ip nsm-vl3-lb {}\ndelete table ip nsm-vl3-lb\n", nat.ruleset(nil))
}

func TestAnIPv6VIPGetsAnIPv6Table(t *testing.T) {
	nat := natBalancer{vip: net.ParseIP("2001:db8::3"), protocol: "tcp", port: 80, targetPort: 80}
	got := nat.ruleset([]net.IP{net.ParseIP("2001:db8::1:2")})
	require.Contains(t, got, "table ip6 nsm-vl3-lb {\n")
	require.Contains(t, got, "ip6 daddr 2001:db8::3 tcp dport 80 dnat ip6 addr . port to numgen random mod 1 map { 0 : 2001:db8::1:2 . 80 }")
	require.Contains(t, got, "snat ip6 to 2001:db8::3")
}
