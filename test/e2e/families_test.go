package e2e_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/policyroute"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The address families NSM users run besides IPv4 (deployments-k8s v1.18 examples/features/ipv6 and
// dual-stack): the endpoint hands out IPv6 addresses only, or one of each family. Each scenario
// connects a client with policy routes of its families, checks both pods and pings every address
// both ways, restarts the forwarders under a running ping (nothing lost, nothing written in either
// pod), and then requires Close to leave every pod, node and VPP as before.
const (
	// endpointCIDRv6 is a unique local prefix the endpoint hands IPv6 addresses from.
	endpointCIDRv6 = "fd00:16:100::/64"
	// dualStackCIDR hands out one address of each family per side, as cmd-nse-icmp-responder does
	// with a list in NSM_CIDR_PREFIX.
	dualStackCIDR = endpointCIDR + "," + endpointCIDRv6
)

// ipv6Policies are crashPolicies in IPv6's documentation prefix (RFC 3849): all traffic to one
// prefix, TCP to port 5201 and UDP to port 53 to halves of another, each a table of its own.
var ipv6Policies = []string{"2001:db8:100::/48", "2001:db8:200::/49@6:5201", "2001:db8:200:8000::/49@17:53"}

// dualStackPolicies are both families' policies: one rule and table per family and selector.
var dualStackPolicies = append(append([]string{}, crashPolicies...), ipv6Policies...)

// IPv6 only, on one node over veth pairs; on the simulator and on real VPP.
func TestIPv6OverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{report: "IPv6 only over veth, forwarder restart", tag: "v6veth", kernelType: "veth", linkType: "veth", nodes: 1,
			requestTimeout: crashRequestTimeout, realVPP: realVPP, cidr: endpointCIDRv6, policies: ipv6Policies}})
	})
}

// IPv4 and IPv6 on one connection, on one node over veth pairs; on the simulator and on real VPP.
func TestDualStackOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{report: "dual-stack over veth, forwarder restart", tag: "dsveth", kernelType: "veth", linkType: "veth", nodes: 1,
			requestTimeout: crashRequestTimeout, realVPP: realVPP, cidr: dualStackCIDR, policies: dualStackPolicies}})
	})
}

// IPv6 only, client on node1 and endpoint on node2 over VXLAN between the nodes' (IPv4) tunnel IPs;
// on the simulator and on real VPP.
func TestIPv6OverVxlan(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{report: "IPv6 only over vxlan, forwarder restart", tag: "v6vx", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true,
			requestTimeout: crashRequestTimeout, realVPP: realVPP, cidr: endpointCIDRv6, policies: ipv6Policies}})
	})
}

// IPv4 and IPv6 on one connection across nodes over VXLAN; on the simulator and on real VPP.
func TestDualStackOverVxlan(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runForwarderRestart(t, restartScenario{scenario: scenario{report: "dual-stack over vxlan, forwarder restart", tag: "dsvx", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true,
			requestTimeout: crashRequestTimeout, realVPP: realVPP, cidr: dualStackCIDR, policies: dualStackPolicies}})
	})
}

// requirePolicySelectors requires the endpoint to have given the client's connection one policy
// route per selector of policies (e2e-nse's NSM_POLICY_ROUTES) and address family the client has an
// address of, so that the scenario exercises several rules and tables per family in one namespace.
func requirePolicySelectors(t *testing.T, client *domain.Client, policies []string) {
	t.Helper()
	ipContext := client.Connections[0].GetContext().GetIpContext()
	families := map[bool]bool{}
	for _, src := range ipContext.GetSrcIpAddrs() {
		families[netip.MustParsePrefix(src).Addr().Is4()] = true
	}
	type familySelector struct {
		is4      bool
		selector string
	}
	selectors := map[familySelector]bool{}
	for _, entry := range policies {
		prefix, selector, _ := strings.Cut(entry, "@")
		is4 := netip.MustParsePrefix(prefix).Addr().Is4()
		if families[is4] {
			selectors[familySelector{is4, selector}] = true
		}
	}
	require.Len(t, ipContext.GetPolicies(), len(selectors),
		"the endpoint should give one policy per NSM_POLICY_ROUTES selector and family of the client's addresses %v: %v", ipContext.GetSrcIpAddrs(), ipContext.GetPolicies())
}

// requirePolicyTablesInRange requires every rule of the pod to look up a table of the forwarder's
// range (policyroute.DefaultTableRange), whatever its family: the tables are computed from the
// connection and the selector, never taken from a counter (design; the restart scenarios require
// the same rules after the restart).
func requirePolicyTablesInRange(t *testing.T, state *topology.State) {
	t.Helper()
	first, count := policyroute.DefaultTableRange()
	for _, rule := range state.Rules {
		require.True(t, uint32(rule.Table) >= first && uint32(rule.Table)-first < count,
			"the rule from %s looks up table %d, outside the forwarder's range [%d, %d)\n%s", rule.Src, rule.Table, first, uint64(first)+uint64(count), state)
	}
}
