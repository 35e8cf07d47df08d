package xconnect_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

var (
	nscIP = netip.MustParsePrefix(nscAddress).Addr()
	nseIP = netip.MustParsePrefix(nseAddress).Addr()
)

// A ping between the client's and the endpoint's namespaces crosses only what the forwarder
// programmed: the kernel interfaces, VPP's interfaces and its cross-connect between them.
func TestKernelToKernelDataPath(t *testing.T) {
	for _, kind := range []kernelif.Kind{kernelif.Tap, kernelif.Veth} {
		t.Run(kind.String(), func(t *testing.T) {
			eachBackendFor(t, kind, func(t *testing.T, backend vpptest.Backend) {
				nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
				h := newHarness(t, backend, kind, kernelNextHop(nse.Path(), "nse-1"))

				conn := h.request(t, kernelRequest("conn-ping-"+kind.String(), nsc.Path(), "nsc-1", payload.IP))

				require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second), "client to endpoint")
				require.NoError(t, vppsimtest.Ping(nse, nseIP, nscIP, 5*time.Second), "endpoint to client")

				h.close(t, conn)

				require.Error(t, vppsimtest.Ping(nsc, nscIP, nseIP, time.Second), "the data path outlived Close")
				h.vpp.requireOnlyUplink(t)
				require.Equal(t, []string{"lo"}, linkNamesIn(t, nsc.Path()), "links left in the client namespace")
				require.Equal(t, []string{"lo"}, linkNamesIn(t, nse.Path()), "links left in the endpoint namespace")
			})
		})
	}
}

// A policy route steers the client's traffic from its address into a table of its own: the
// endpoint's service address is reachable through it and through nothing else. The route names
// the endpoint as next hop: over a veth pair (Ethernet) a route without one would make the client
// ARP for every destination, which no one answers (VPP cross-connects, it answers no ARP).
func TestPolicyRouteThroughTheDataPath(t *testing.T) {
	vpptest.Each(t, testPolicyRouteThroughTheDataPath)
}

func testPolicyRouteThroughTheDataPath(t *testing.T, backend vpptest.Backend) {
	const servicePrefix = "10.99.0.0/24"
	service := netip.MustParseAddr("10.99.0.1")
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	nse.AddrAdd(t, "lo", service.String()+"/32")
	h := newHarness(t, backend, kindOn(backend), kernelNextHop(nse.Path(), "nse-1"))
	request := kernelRequest("conn-policy", nsc.Path(), "nsc-1", payload.IP)
	request.GetConnection().GetContext().GetIpContext().Policies = []*networkservice.PolicyRoute{{
		From:   nscAddress,
		Routes: []*networkservice.Route{{Prefix: servicePrefix, NextHop: nseIP.String()}},
	}}

	conn := h.request(t, request)

	rules := markedRules(t, nsc.Path())
	require.Len(t, rules, 1, "one rule for the one IPv4 policy")
	require.Equal(t, nscAddress, rules[0].Src.String())
	table := rules[0].Table
	var routes []string
	for _, route := range markedRoutes(t, nsc.Path(), table) {
		routes = append(routes, route.Dst.String())
	}
	require.Equal(t, []string{servicePrefix}, routes, "table %d must hold the policy's routes", table)
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, service, 5*time.Second), "traffic from the policy's source must take its table")

	h.close(t, conn)

	require.Empty(t, markedRules(t, nsc.Path()), "the policy's rule outlived Close")
	require.Empty(t, markedRoutes(t, nsc.Path(), table), "table %d outlived Close", table)
	require.Error(t, vppsimtest.Ping(nsc, nscIP, service, time.Second))
}

// markedRules lists the IPv4 rules of the namespace at path that carry the forwarder's mark.
func markedRules(t *testing.T, path string) []netlink.Rule {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	rules, err := handle.RuleList(netlink.FAMILY_V4)
	require.NoError(t, err)
	var marked []netlink.Rule
	for _, rule := range rules {
		if rule.Protocol == routeview.ForwarderProtocol {
			marked = append(marked, rule)
		}
	}
	return marked
}

// markedRoutes lists the IPv4 routes of one table that carry the forwarder's mark.
func markedRoutes(t *testing.T, path string, table int) []netlink.Route {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	routes, err := handle.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table, Protocol: routeview.ForwarderProtocol},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	require.NoError(t, err)
	return routes
}
