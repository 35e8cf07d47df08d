package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Scenarios named after the examples of NSM's deployments-k8s v1.18.0 (issue 24,
// docs/upstream-examples.md): each does what the example's README does, in the same order, with
// the same pings and the same `ip route get` checks of policy-based routing, and ends with this
// harness's baseline check (nothing left in pods, nodes or VPP after Close).
//
// Differences from upstream, all listed in docs/upstream-examples.md: components are SIGKILLed
// or stopped in place of pod deletion; a policy's table is this forwarder's deterministic ID,
// not stock's 1 to 5, so the checks match the table by pattern (and, for this forwarder, require
// the rule looking it up to carry its mark); pings are 4 each way at 0.2 s intervals.

const (
	// upstreamCIDR and upstreamNewCIDR are the endpoints' NSM_CIDR_PREFIX in the heal examples
	// (the new one for an endpoint that replaces a dead one).
	upstreamCIDR    = "172.16.1.100/31"
	upstreamNewCIDR = "172.16.1.102/31"
)

// upstreamPolicies is the policy set of deployments-k8s apps/nse-kernel-pbr, in the format of
// cmd-nse-icmp-responder's policies file: TCP 6666 from 172.16.2.201/24 routed to 172.16.3.0/24
// via 172.16.2.200; TCP from the same source and source port 5555; UDP 6666 and UDP 6667-6670,
// no source and no route; UDP 5555 from 2004::3/120 routed to 2004::5/120 via 2004::6.
var upstreamPolicies = strings.Join([]string{
	"- {from: 172.16.2.201/24, proto: 6, dstport: 6666, routes: [{prefix: 172.16.3.0/24, nexthop: 172.16.2.200}]}",
	"- {from: 172.16.2.201/24, proto: 6, srcport: 5555}",
	"- {proto: 17, dstport: 6666}",
	"- {proto: 17, dstport: 6667-6670}",
	"- {from: 2004::3/120, proto: 17, dstport: 5555, routes: [{prefix: 2004::5/120, nexthop: 2004::6}]}",
}, "\n") + "\n"

// policyCheck is one of the examples' five `ip route get` checks: its arguments, and the
// output it must match, %s standing for the client's own address where upstream names it.
type policyCheck struct {
	args []string
	want string
	// rule matches what `ip rule` prints for the rule looking up the table (not in upstream's
	// checks, which an unselective rule would pass too); stock keeps the policy's source
	// unmasked, this forwarder masks it.
	rule string
}

// upstreamPolicyChecks are the examples' checks, in their order. Upstream greps for `table 1`
// to `table 5`; here the table is any number (this forwarder derives it from the connection and
// the policy, by design) and requireUpstreamPolicyRouting requires the five to differ.
var upstreamPolicyChecks = []policyCheck{
	{[]string{"route", "get", "172.16.3.1", "from", "172.16.2.201", "ipproto", "tcp", "dport", "6666"},
		`172\.16\.3\.1 from 172\.16\.2\.201 via 172\.16\.2\.200 dev nsm-1 table ([0-9]+)`, `from 172\.16\.2\.(0|201)/24 ipproto tcp dport 6666 lookup`},
	{[]string{"route", "get", "172.16.3.1", "from", "172.16.2.201", "ipproto", "tcp", "sport", "5555"},
		`172\.16\.3\.1 from 172\.16\.2\.201 dev nsm-1 table ([0-9]+)`, `from 172\.16\.2\.(0|201)/24 ipproto tcp sport 5555 lookup`},
	{[]string{"route", "get", "172.16.4.1", "ipproto", "udp", "dport", "6666"},
		`172\.16\.4\.1 dev nsm-1 table ([0-9]+)` + routeProto + ` src %s`, `from all ipproto udp dport 6666 lookup`},
	{[]string{"route", "get", "172.16.4.1", "ipproto", "udp", "dport", "6668"},
		`172\.16\.4\.1 dev nsm-1 table ([0-9]+)` + routeProto + ` src %s`, `from all ipproto udp dport 6667-6670 lookup`},
	{[]string{"-6", "route", "get", "2004::5", "from", "2004::3", "ipproto", "udp", "dport", "5555"},
		`via 2004::6 dev nsm-1 table ([0-9]+)` + routeProto + ` src 2004::3`, `from 2004::(3)?/120 ipproto udp dport 5555 lookup`},
}

// routeProto is the protocol `ip route get` prints after the table when a route has one other
// than boot: this forwarder marks its routes (proto 250, by design), stock's have none.
const routeProto = `(?: proto [0-9a-z]+)?`

// upstreamScenario is the domain of a deployments-k8s example: one node, or the client on the
// first node and the endpoint on the second, VXLAN between them.
func upstreamScenario(tag string, nodes int, realVPP string) scenario {
	sc := scenario{tag: tag, kernelType: "veth", linkType: "veth", nodes: nodes, requestTimeout: crashRequestTimeout, realVPP: realVPP}
	if nodes == 2 {
		sc.kernelType, sc.linkType, sc.endpointNode, sc.overVxlan = "auto", "", 1, true
	}
	return sc
}

// connectUpstream starts sc's domain, an endpoint like nse-kernel-pbr on sc's endpoint node and
// the client, and requires the examples' first checks: pings both ways and the policy checks.
func connectUpstream(ctx context.Context, t *testing.T, sc scenario) (*domain.Domain, *domain.Endpoint, *domain.Client) {
	t.Helper()
	d := startDomain(ctx, t, sc)
	nse := startUpstreamEndpoint(ctx, t, d, d.Nodes[sc.endpointNode], "nse-kernel", upstreamCIDR)
	client := connectClient(ctx, t, d, sc)
	requireUpstreamConnected(ctx, t, d, sc, client, nse, upstreamCIDR, "")
	return d, nse, client
}

// startUpstreamEndpoint starts an endpoint like deployments-k8s apps/nse-kernel-pbr: the
// upstream policies, addresses from cidr.
func startUpstreamEndpoint(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, name, cidr string) *domain.Endpoint {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	require.NoError(t, os.WriteFile(path, []byte(upstreamPolicies), 0o600))
	nse, err := d.StartEndpoint(ctx, node, name, service, cidr, domain.WithPoliciesFile(path))
	require.NoError(t, err)
	return nse
}

// upstreamAddrs returns the client's and the endpoint's addresses from cidr in the client's
// connection (the endpoint's policies give the client more).
func upstreamAddrs(t *testing.T, client *domain.Client, cidr string) (clientAddr, nseAddr string) {
	t.Helper()
	prefix := netip.MustParsePrefix(cidr)
	ipContext := client.Connections[0].GetContext().GetIpContext()
	pick := func(cidrs []string) string {
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil && prefix.Contains(p.Addr()) {
				return p.Addr().String()
			}
		}
		return ""
	}
	clientAddr, nseAddr = pick(ipContext.GetSrcIpAddrs()), pick(ipContext.GetDstIpAddrs())
	require.NotEmpty(t, clientAddr, "the client has no address in %s: %v", cidr, ipContext)
	require.NotEmpty(t, nseAddr, "the endpoint has no address in %s: %v", cidr, ipContext)
	return clientAddr, nseAddr
}

// requireUpstreamConnected checks what the examples check once connected: the client pod holds
// nsm-1, up, with exactly its connection's addresses (those from cidr and the policies'
// sources), the endpoint pod one interface with the endpoint's, 4 pings each way between the
// addresses from cidr, then the five policy checks.
//
// policySrc is the source address the third and fourth checks expect; empty is the client's
// address from cidr.
func requireUpstreamConnected(ctx context.Context, t *testing.T, d *domain.Domain, sc scenario, client *domain.Client, nse *domain.Endpoint, cidr, policySrc string) {
	t.Helper()
	ipContext := client.Connections[0].GetContext().GetIpContext()
	clientState, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	require.Equal(t, clientIfname, onlyNonLoopback(t, "client pod", clientState))
	link, _ := clientState.Link(clientIfname)
	require.True(t, link.Up, "client pod: %s is down\n%s", clientIfname, clientState)
	require.Equal(t, uniquePrefixes(t, ipContext.GetSrcIpAddrs()), uniquePrefixes(t, link.Addrs), "client pod: addresses of %s\n%s", clientIfname, clientState)
	nseState, err := topology.Inspect(nse.Pod.Netns)
	require.NoError(t, err)
	nseIfname := onlyNonLoopback(t, "endpoint pod", nseState)
	nseLink, _ := nseState.Link(nseIfname)
	require.Equal(t, uniquePrefixes(t, ipContext.GetDstIpAddrs()), uniquePrefixes(t, nseLink.Addrs), "endpoint pod: addresses of %s\n%s", nseIfname, nseState)
	if sc.linkType != "" {
		require.Equal(t, sc.linkType, link.Type, "client pod interface kind\n%s", clientState)
	}
	if sc.overVxlan {
		for _, node := range d.Nodes {
			requireVPPHolds(ctx, t, d, node, "vxlan")
		}
	}
	clientAddr, nseAddr := upstreamAddrs(t, client, cidr)
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
	if policySrc == "" {
		policySrc = clientAddr
	}
	requireUpstreamPolicyRouting(ctx, t, d, client, policySrc)
}

// uniquePrefixes normalizes prefixes and drops repeats: sdk's policyroute server appends a
// policy's source to the client's addresses once per policy, so two policies from one source
// list it twice.
func uniquePrefixes(t *testing.T, prefixes []string) []string {
	t.Helper()
	return slices.Compact(normalizePrefixes(t, prefixes))
}

// requireUpstreamPing pings to from from, 4 times, as the examples do (`ping -c 4 -I from to`).
func requireUpstreamPing(ctx context.Context, t *testing.T, netns, from, to string) {
	t.Helper()
	out, err := upstreamPing(ctx, netns, from, to)
	require.NoError(t, err, "ping %s from %s in %s:\n%s", to, from, netns, out)
}

func upstreamPing(ctx context.Context, netns, from, to string) ([]byte, error) {
	return exec.CommandContext(ctx, "ip", "netns", "exec", netns,
		"ping", "-c", "4", "-i", "0.2", "-W", "2", "-I", from, to).CombinedOutput()
}

// requireUpstreamPolicyRouting runs the examples' five `ip route get` in the client pod and
// requires each answer to match, the five through five different tables, each looked up by a
// rule of the pod (carrying this forwarder's mark when it runs).
func requireUpstreamPolicyRouting(ctx context.Context, t *testing.T, d *domain.Domain, client *domain.Client, clientAddr string) {
	t.Helper()
	state, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	var tables []int
	for _, check := range upstreamPolicyChecks {
		args := append([]string{"netns", "exec", client.Pod.Netns, "ip"}, check.args...)
		out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s:\n%s\n%s", strings.Join(check.args, " "), out, state)
		want := check.want
		if strings.Contains(want, "%s") {
			want = fmt.Sprintf(want, regexp.QuoteMeta(clientAddr))
		}
		m := regexp.MustCompile(want).FindSubmatch(out)
		require.NotNil(t, m, "ip %s answered\n%s\nwhich does not match %q\n%s", strings.Join(check.args, " "), out, want, state)
		table, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		require.NotContains(t, tables, table, "ip %s: two policies share table %d\n%s", strings.Join(check.args, " "), table, state)
		tables = append(tables, table)
		i := slices.IndexFunc(state.Rules, func(r topology.Rule) bool { return r.Table == table })
		require.GreaterOrEqual(t, i, 0, "no rule looks up table %d\n%s", table, state)
		if ourDesign(d) {
			require.Equal(t, forwarderRouteProtocol, state.Rules[i].Protocol, "the rule looking up table %d does not carry the forwarder's mark\n%s", table, state)
		}
		family := "-4"
		if check.args[0] == "-6" {
			family = "-6"
		}
		rules, err := exec.CommandContext(ctx, "ip", "netns", "exec", client.Pod.Netns, "ip", family, "rule", "show", "table", strconv.Itoa(table)).CombinedOutput()
		require.NoError(t, err, "ip rule show table %d:\n%s", table, rules)
		require.Regexp(t, check.rule, string(rules), "ip %s: the rule looking up table %d selects other traffic than the policy\n%s", strings.Join(check.args, " "), table, rules)
	}
	t.Logf("policy checks pass: tables %v", tables)
}

// features/policy-based-routing: one node; pings both ways; the five policy checks. Then Close
// leaves nothing.
func TestUpstreamFeaturesPolicyBasedRouting(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("upbr", 1, realVPP)
		ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
		defer cancel()
		d, nse, client := connectUpstream(ctx, t, sc)
		requireCloseLeavesNothing(ctx, t, d, client, nse)
	})
}

// heal/local-nsmgr-restart: client on node 1, endpoint on node 2, VXLAN; pings; the client
// node's nsmgr restarted (SIGKILL here, pod deletion upstream); pings; the five policy checks.
func TestUpstreamHealLocalNsmgrRestart(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("ulmgr", 2, realVPP)
		ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
		defer cancel()
		d, nse, client := connectUpstream(ctx, t, sc)

		killedAt := time.Now()
		require.NoError(t, d.RestartNsmgr(ctx, d.Nodes[0]))
		healed := requireHealed(t, killedAt, client)
		t.Logf("the client was granted its connection again %s after the nsmgr's SIGKILL", healed.Round(100*time.Millisecond))
		requireUpstreamConnected(ctx, t, d, sc, client, nse, upstreamCIDR, "")
		requireCloseLeavesNothing(ctx, t, d, client, nse)
	})
}

// heal/local-nse-death: one node; pings from the assigned addresses; the endpoint stopped (its
// pod and its interfaces gone); the client's ping must fail; a new endpoint in a new pod hands out another /31; the
// client heals onto it; pings between the new addresses; the five policy checks.
//
// After the heal the third and fourth checks still expect the old address (`src 172.16.1.101`),
// as upstream's do: the new endpoint's IPAM (sdk's point2pointipam) keeps in the connection's
// context the client's addresses outside its own range, so the client holds both, the old one
// first, as the context says.
func TestUpstreamHealLocalNseDeath(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("ulnse", 1, realVPP)
		ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
		defer cancel()
		d, nse, client := connectUpstream(ctx, t, sc)
		node := d.Nodes[0]
		oldClientAddr, oldNseAddr := upstreamAddrs(t, client, upstreamCIDR)

		// A deleted pod's network namespace goes with its interfaces; here the NSM programs hold
		// file descriptors of the endpoint's namespace for the connection's life (sdk's recvfd),
		// which would keep it and its interface answering pings after `ip netns del`, and the
		// client's liveness check would never see the data path break. So the pod's interfaces
		// are deleted first, as the namespace's destruction does.
		deletePodLinks(ctx, t, nse.Pod.Netns)
		stoppedAt := time.Now()
		require.NoError(t, nse.Close())
		requireEventuallyUnregistered(ctx, t, d, nse.Name)
		// Upstream pings once right after scaling the endpoint down, its pod's termination and
		// kubectl's round trips giving the client's heal time to close the old path; here the
		// ping is repeated until it fails.
		var out []byte
		waitUntil(t, stoppedAt.Add(healTimeout), 0, func() bool {
			var err error
			out, err = upstreamPing(ctx, client.Pod.Netns, oldClientAddr, oldNseAddr)
			return err != nil
		}, func() string {
			return fmt.Sprintf("%s after the endpoint stopped, the client still reaches its address:\n%s", healTimeout, out)
		})
		t.Logf("the client's ping failed %s after the endpoint stopped:\n%s", time.Since(stoppedAt).Round(100*time.Millisecond), out)

		newNSE := startUpstreamEndpoint(ctx, t, d, node, "nse-kernel-new", upstreamNewCIDR)
		newPrefix := netip.MustParsePrefix(upstreamNewCIDR)
		waitUntil(t, stoppedAt.Add(2*healTimeout), 250*time.Millisecond, func() bool {
			if client.ReloadConnections() != nil || len(client.Connections) != 1 {
				return false
			}
			for _, a := range client.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs() {
				if p, err := netip.ParsePrefix(a); err == nil && newPrefix.Contains(p.Addr()) {
					return true
				}
			}
			return false
		}, func() string {
			return fmt.Sprintf("the client did not heal onto the new endpoint within %s:\n%s", 2*healTimeout, client.Proc.LogTail(30))
		})
		t.Logf("the client healed onto the new endpoint %s after the old one stopped", time.Since(stoppedAt).Round(100*time.Millisecond))
		requireUpstreamConnected(ctx, t, d, sc, client, newNSE, upstreamNewCIDR, oldClientAddr)
		requireCloseLeavesNothing(ctx, t, d, client, newNSE)
	})
}

// heal/dataplane-interrupt: one node; pings; a background ping every 0.2 s; the client's nsm-1
// set down inside its pod; the ping must see a gap (upstream: within 10 s); the client's data
// path liveness check notices and heals; pings both ways; the five policy checks.
func TestUpstreamHealDataplaneInterrupt(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("udpi", 1, realVPP)
		ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
		defer cancel()
		d, nse, client := connectUpstream(ctx, t, sc)
		clientAddr, nseAddr := upstreamAddrs(t, client, upstreamCIDR)

		pinger, err := topology.StartPing(client.Pod.Netns, clientAddr, nseAddr, 200*time.Millisecond)
		require.NoError(t, err)
		defer func() { _, _ = pinger.Stop() }()
		time.Sleep(2 * time.Second)
		downAt := time.Now()
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", client.Pod.Netns, "ip", "link", "set", clientIfname, "down").CombinedOutput()
		require.NoError(t, err, "ip link set %s down:\n%s", clientIfname, out)
		healed := requireHealed(t, downAt, client)
		t.Logf("the client was granted its connection again %s after %s went down", healed.Round(100*time.Millisecond), clientIfname)
		result, err := pinger.Stop()
		require.NoError(t, err)
		require.NotEmpty(t, result.Unanswered, "the background ping saw no gap though %s went down: %s", clientIfname, result)
		t.Logf("background ping: %s", result)
		requireUpstreamConnected(ctx, t, d, sc, client, nse, upstreamCIDR, "")
		requireCloseLeavesNothing(ctx, t, d, client, nse)
	})
}

// deletePodLinks deletes every interface of a pod but lo.
func deletePodLinks(ctx context.Context, t *testing.T, netns string) {
	t.Helper()
	state, err := topology.Inspect(netns)
	require.NoError(t, err)
	for _, l := range state.Links {
		if l.Name == "lo" {
			continue
		}
		out, err := exec.CommandContext(ctx, "ip", "-n", netns, "link", "del", l.Name).CombinedOutput()
		require.NoError(t, err, "ip -n %s link del %s:\n%s", netns, l.Name, out)
	}
}

// heal/local-forwarder-death: one node; pings; the forwarder's pod deleted (SIGTERM here, then a
// forwarder under a new name, as the DaemonSet's new pod; the node's external VPP stays); pings
// both ways; the five policy checks.
func TestUpstreamHealLocalForwarderDeath(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runUpstreamForwarderDeath(t, upstreamScenario("ulfwd", 1, realVPP), 0)
	})
}

// heal/remote-forwarder-death: client on node 1, endpoint on node 2, VXLAN; pings; the endpoint
// node's forwarder pod deleted and replaced as above; pings both ways; the five policy checks.
func TestUpstreamHealRemoteForwarderDeath(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runUpstreamForwarderDeath(t, upstreamScenario("urfwd", 2, realVPP), 1)
	})
}

func runUpstreamForwarderDeath(t *testing.T, sc scenario, dyingNode int) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d, nse, client := connectUpstream(ctx, t, sc)

	node := d.Nodes[dyingNode]
	deletedAt := time.Now()
	require.NoError(t, d.DeleteForwarderPod(ctx, node, node.ForwarderName+"-new"))
	healed := requireHealed(t, deletedAt, client)
	t.Logf("the client was granted its connection again %s after the forwarder's SIGTERM", healed.Round(100*time.Millisecond))
	requireUpstreamConnected(ctx, t, d, sc, client, nse, upstreamCIDR, "")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// heal/registry-restart: the client with the PBR endpoint on node 1; a second client (2-minute
// tokens, 5 s request timeout, no liveness check) on node 2 to an IPv6 endpoint on node 1 as
// nsm-2. Pings; both clients' NSM interface index noted; the registry's pod deleted and back; a
// third client connects to the first endpoint; pings both ways; 120 s later both interfaces still
// have their index; the five policy checks. Its 120 s wait keeps it out of `make test`:
// E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it.
//
// The endpoint's NSM_CIDR_PREFIX is two CIDR groups, so each client gets an address of each (as
// cmd-nse-icmp-responder's groupipam gives): the first client 172.16.2.201/32, the third
// 172.16.2.203/32, and the endpoint pod a /32 route to each through its connection. Both also
// get 172.16.2.201/24 from the policies, whose /24 route in the endpoint pod only the last
// writer holds; the /32 keeps the first client's replies (and its liveness check) on its own
// connection. With one group (the harness before 2 Dec 2026) the /24 was the only route, and the
// two clients' liveness checks failed and healed in turn.
func TestUpstreamHealRegistryRestart(t *testing.T) {
	if os.Getenv("E2E_UPSTREAM_SLOW") == "" {
		t.Skip("issue 24: waits 120 s, beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
	}
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := upstreamScenario("ureg", 2, realVPP)
		sc.endpointNode = 0
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		d := startDomain(ctx, t, sc)
		// The example's NSM_CIDR_PREFIX, two groups: room for the third client in each.
		const cidr = "172.16.1.100/30"
		nse := startUpstreamEndpoint(ctx, t, d, d.Nodes[0], "nse-kernel", cidr+",172.16.2.200/30")
		// The example's nse-kernel-ipv6 has a policies file of its own: TCP 6666 from
		// 172.16.3.101/32, routed to 172.16.3.100/32.
		policies6 := filepath.Join(t.TempDir(), "policies-ipv6.yaml")
		require.NoError(t, os.WriteFile(policies6, []byte("- {from: 172.16.3.101/32, proto: 6, dstport: 6666, routes: [{prefix: 172.16.3.100/32}]}\n"), 0o600))
		nse6, err := d.StartEndpoint(ctx, d.Nodes[0], "nse-kernel-ipv6", "registry-restart-ipv6", "2001:db8::/116", domain.WithPoliciesFile(policies6))
		require.NoError(t, err)
		client := connectClient(ctx, t, d, sc)
		clientCP, err := d.StartClientWithEnv(d.Nodes[1], "client-cp",
			[]string{"NSM_MAX_TOKEN_LIFETIME=2m", "NSM_REQUEST_TIMEOUT=5s", "NSM_LIVENESS_CHECK_ENABLED=false"},
			"kernel://registry-restart-ipv6/nsm-2")
		require.NoError(t, err)
		require.NoError(t, clientCP.WaitGranted(ctx))
		clientAddr, nseAddr := upstreamAddrs(t, client, cidr)
		requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
		requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
		cpIndex, nscIndex := linkIndex(ctx, t, clientCP.Pod.Netns, "nsm-2"), linkIndex(ctx, t, client.Pod.Netns, clientIfname)

		restartedAt := time.Now()
		require.NoError(t, d.DeleteRegistryPod(ctx))
		newClient, err := d.Connect(ctx, d.Nodes[0], "nsc-new", fmt.Sprintf("kernel://%s/%s", service, clientIfname))
		require.NoError(t, err, "a new client after the registry's restart")
		t.Logf("a new client was granted %s after the registry's restart", time.Since(restartedAt).Round(100*time.Millisecond))
		newClientAddr, newNseAddr := upstreamAddrs(t, newClient, cidr)
		requireUpstreamPing(ctx, t, newClient.Pod.Netns, newClientAddr, newNseAddr)
		requireUpstreamPing(ctx, t, nse.Pod.Netns, newNseAddr, newClientAddr)

		time.Sleep(120 * time.Second)
		require.Equal(t, cpIndex, linkIndex(ctx, t, clientCP.Pod.Netns, "nsm-2"), "client-cp's nsm-2 was re-created")
		require.Equal(t, nscIndex, linkIndex(ctx, t, client.Pod.Netns, clientIfname), "the client's nsm-1 was re-created")
		require.NoError(t, client.ReloadConnections())
		requireUpstreamPolicyRouting(ctx, t, d, client, clientAddr)

		clients := []*domain.Client{client, clientCP, newClient}
		for _, c := range clients {
			require.NoError(t, c.Close(), "%s's Close failed:\n%s", c.Name, c.Proc.LogTail(20))
			requireEventuallyEmpty(t, "client pod "+c.Name, c.Pod.Netns)
		}
		for _, e := range []*domain.Endpoint{nse, nse6} {
			requireEventuallyEmpty(t, "endpoint pod "+e.Name, e.Pod.Netns)
		}
		for _, node := range d.Nodes {
			requireVPPClean(ctx, t, d, node)
			requireNodeKernelClean(t, node)
		}
		requireEndpointUnregisters(ctx, t, d, nse)
		requireEndpointUnregisters(ctx, t, d, nse6)
	})
}

// linkIndex returns the index of a pod's interface, as `ip link show dev` prints it first.
func linkIndex(ctx context.Context, t *testing.T, netns, ifname string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ip", "-n", netns, "-o", "link", "show", "dev", ifname).CombinedOutput()
	require.NoError(t, err, "ip link show dev %s in %s:\n%s", ifname, netns, out)
	index, _, _ := strings.Cut(string(out), ":")
	return index
}
