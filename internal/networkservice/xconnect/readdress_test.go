package xconnect_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// kernelEnd is what one end of a connection holds in its namespace: the interface's global addresses and
// the main-table routes through it that the IP context asks for (the kernel's own and link-local ones left out).
type kernelEnd struct {
	addresses []string
	routes    []string
}

func kernelEndOf(t *testing.T, path, ifName string) kernelEnd {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	link, err := handle.LinkByName(ifName)
	require.NoError(t, err)
	var end kernelEnd
	addrs, err := handle.AddrList(link, netlink.FAMILY_ALL)
	require.NoError(t, err)
	for _, addr := range addrs {
		if addr.Scope == unix.RT_SCOPE_UNIVERSE {
			end.addresses = append(end.addresses, addr.IPNet.String())
		}
	}
	routes, err := handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: link.Attrs().Index, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	for _, route := range routes {
		if route.Protocol == unix.RTPROT_KERNEL || route.Dst != nil && (route.Dst.IP.IsLinkLocalUnicast() || route.Dst.IP.IsMulticast()) {
			continue
		}
		end.routes = append(end.routes, fmt.Sprintf("%v via %v", route.Dst, route.Gw))
	}
	sort.Strings(end.addresses)
	sort.Strings(end.routes)
	return end
}

// contextStep is one IP context the endpoint hands out, and what each kernel end must then hold.
type contextStep struct {
	name                   string
	srcAddrs, dstAddrs     []string
	srcRoutes, dstRoutes   []*networkservice.Route
	clientEnd, endpointEnd kernelEnd
}

func routes(prefixAndNextHop ...string) []*networkservice.Route {
	var out []*networkservice.Route
	for i := 0; i < len(prefixAndNextHop); i += 2 {
		out = append(out, &networkservice.Route{Prefix: prefixAndNextHop[i], NextHop: prefixAndNextHop[i+1]})
	}
	return out
}

// Re-Requests that change the routes, their next hops and the addresses leave both kernel ends exactly as the
// new context says: the endpoint's side too, where routes and next hops used to be only ever added.
func TestReRequestLeavesBothKernelEndsAsTheNewContextSays(t *testing.T) {
	nsc, nse := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, vpptest.Sim, kernelif.Tap, kernelNextHop(nse, "nse-1"))
	request := kernelRequest("conn-readdress", nsc, "nsc-1", payload.IP)
	steps := []contextStep{{
		name:     "first Request",
		srcAddrs: []string{"172.16.0.1/32", "fd00::1/128"}, dstAddrs: []string{"172.16.0.2/32", "fd00::2/128"},
		srcRoutes: routes("10.10.0.0/16", "", "10.11.0.0/16", "", "fd10::/64", ""),
		dstRoutes: routes("10.20.0.0/16", "", "10.21.0.0/16", "", "fd20::/64", "", "fd21::/64", ""),
		clientEnd: kernelEnd{addresses: []string{"172.16.0.1/32", "fd00::1/128"}, routes: []string{
			"10.10.0.0/16 via 172.16.0.2", "10.11.0.0/16 via 172.16.0.2", "172.16.0.2/32 via <nil>", "fd00::2/128 via <nil>", "fd10::/64 via fd00::2"}},
		endpointEnd: kernelEnd{addresses: []string{"172.16.0.2/32", "fd00::2/128"}, routes: []string{
			"10.20.0.0/16 via 172.16.0.1", "10.21.0.0/16 via 172.16.0.1", "172.16.0.1/32 via <nil>", "fd00::1/128 via <nil>",
			"fd20::/64 via fd00::1", "fd21::/64 via fd00::1"}},
	}, {
		name:     "routes dropped, moved and added",
		srcAddrs: []string{"172.16.0.1/32", "fd00::1/128"}, dstAddrs: []string{"172.16.0.2/32", "fd00::2/128"},
		srcRoutes: routes("10.10.0.0/16", "172.16.0.9", "10.12.0.0/16", ""),
		dstRoutes: routes("10.20.0.0/16", "172.16.0.8", "10.22.0.0/16", "", "fd20::/64", "fd00::8"),
		clientEnd: kernelEnd{addresses: []string{"172.16.0.1/32", "fd00::1/128"}, routes: []string{
			"10.10.0.0/16 via 172.16.0.9", "10.12.0.0/16 via 172.16.0.2", "172.16.0.2/32 via <nil>", "fd00::2/128 via <nil>"}},
		endpointEnd: kernelEnd{addresses: []string{"172.16.0.2/32", "fd00::2/128"}, routes: []string{
			"10.20.0.0/16 via 172.16.0.8", "10.22.0.0/16 via 172.16.0.1", "172.16.0.1/32 via <nil>", "fd00::1/128 via <nil>",
			"fd20::/64 via fd00::8"}},
	}, {
		name:     "re-addressed",
		srcAddrs: []string{"172.16.0.5/32", "fd00::5/128"}, dstAddrs: []string{"172.16.0.6/32", "fd00::6/128"},
		srcRoutes: routes("10.10.0.0/16", ""),
		dstRoutes: routes("10.22.0.0/16", "", "fd22::/64", ""),
		clientEnd: kernelEnd{addresses: []string{"172.16.0.5/32", "fd00::5/128"}, routes: []string{
			"10.10.0.0/16 via 172.16.0.6", "172.16.0.6/32 via <nil>", "fd00::6/128 via <nil>"}},
		endpointEnd: kernelEnd{addresses: []string{"172.16.0.6/32", "fd00::6/128"}, routes: []string{
			"10.22.0.0/16 via 172.16.0.5", "172.16.0.5/32 via <nil>", "fd00::5/128 via <nil>", "fd22::/64 via fd00::5"}},
	}}
	var conn *networkservice.Connection
	for _, step := range steps {
		if conn != nil {
			request.Connection = conn.Clone()
		}
		ipContext := request.GetConnection().GetContext().GetIpContext()
		ipContext.SrcIpAddrs, ipContext.DstIpAddrs = step.srcAddrs, step.dstAddrs
		ipContext.SrcRoutes, ipContext.DstRoutes = step.srcRoutes, step.dstRoutes
		conn = h.request(t, request)
		require.Equal(t, step.clientEnd, kernelEndOf(t, nsc, "nsc-1"), "client end after %s", step.name)
		require.Equal(t, step.endpointEnd, kernelEndOf(t, nse, "nse-1"), "endpoint end after %s", step.name)
	}

	h.close(t, conn)
	require.Nil(t, linkIn(t, nse, "nse-1"), "endpoint end left behind")
}
