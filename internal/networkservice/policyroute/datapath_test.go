package policyroute

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// routeGet asks the kernel which route a packet with these properties takes, as `ip route get` does.
func (n *testNS) routeGet(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := exec.Command("ip", append([]string{"-n", n.name, "route", "get"}, args...)...).CombinedOutput()
	return string(out)
}

// TestPacketsFollowThePolicy checks the kernel's own route lookup: the selector's protocol, ports and source
// pick the policy table, anything else does not.
func TestPacketsFollowThePolicy(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 is needed to ask the kernel for route lookups with ports")
	}
	n := newTestNS(t)
	link := n.addLink(t, "nsm0")
	l, err := n.handle.LinkByIndex(link)
	require.NoError(t, err)
	for _, addr := range []string{"172.16.0.1/32", "fd00::1/128"} {
		a, err := netlink.ParseAddr(addr)
		require.NoError(t, err)
		a.Flags = 0x80 // IFA_F_NODAD: the address is usable at once
		require.NoError(t, n.handle.AddrAdd(l, a))
	}
	web := &networkservice.PolicyRoute{From: "172.16.0.1/32", Proto: "tcp", DstPort: "8000-8080",
		Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16", NextHop: "172.16.0.2"}}}
	v6 := &networkservice.PolicyRoute{From: "fd00::1/128"}
	anySourceV6 := &networkservice.PolicyRoute{Proto: "udp", Routes: []*networkservice.Route{{Prefix: "fd02::/64"}}}
	request(t, newChain(), newRequest(n, "conn-1", "nsm0", web, v6, anySourceV6))

	o := newOptions(nil)
	webTable := o.candidateTables("conn-1", selector{Src: netip.MustParsePrefix("172.16.0.1/32"), Proto: 6, Dport: routeview.PortRange{Start: 8000, End: 8080}})[0]
	v6Table := o.candidateTables("conn-1", selector{Src: netip.MustParsePrefix("fd00::1/128")})[0]

	hit := n.routeGet(t, "10.1.2.3", "from", "172.16.0.1", "ipproto", "tcp", "dport", "8080")
	require.Contains(t, hit, "via 172.16.0.2 dev nsm0 table "+fmt.Sprint(webTable), hit)
	for _, miss := range [][]string{
		{"10.1.2.3", "from", "172.16.0.1", "ipproto", "tcp", "dport", "8081"},
		{"10.1.2.3", "from", "172.16.0.1", "ipproto", "udp", "dport", "8080"},
	} {
		out := n.routeGet(t, miss...)
		require.NotContains(t, out, "table "+fmt.Sprint(webTable), strings.Join(miss, " "))
	}
	require.Contains(t, n.routeGet(t, "2001:db8::1", "from", "fd00::1"), "dev nsm0 table "+fmt.Sprint(v6Table))
	anySourceTable := o.candidateTables("conn-1", selector{Proto: 17})[0]
	require.Contains(t, n.routeGet(t, "fd02::1", "ipproto", "udp"), "dev nsm0 table "+fmt.Sprint(anySourceTable))
	require.NotContains(t, n.routeGet(t, "fd02::1", "ipproto", "tcp"), "table "+fmt.Sprint(anySourceTable))
}
