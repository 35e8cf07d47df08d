package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// use-cases/Kernel2RVlanMultiNS, on the remotevlan_vpp set-up (vlan_test.go): three remote vlan
// endpoints, as upstream's three namespaces have them, serve four services through every node's
// trunk (ext_net1, MTU 1450):
//   - private-bridge (namespace 1): the untagged trunk (vlan 0), 172.10.1.0/24;
//   - blue-bridge and green-bridge (namespace 2), one endpoint: VLAN 300, 172.10.2.0/24;
//   - kernel2rvlan-multins (the set-up's endpoint, used from namespace 3): VLAN 100, 172.10.0.0/24.
//
// Each service has two clients, one per node (upstream's two replicas with anti-affinity). The
// tester on the trunk (upstream's container) has 172.10.1.254 on eth0, 172.10.0.254 on eth0.100
// and 172.10.2.254 on eth0.300. Upstream's checks: each client's nsm-1 has the trunk's MTU; the
// tester reaches each client from its VLAN's interface and from neither other one; the blue
// clients deleted, the green ones (same VLAN, same bridge domain on each node) still answer; then
// namespace 3's clients. Beyond upstream: every echo crosses the node's trunk port tagged with
// its service's VLAN (untagged for private-bridge); each node's VPP keeps the VLAN 300 bridge
// domain while a green client uses it; Close leaves nothing, every bridge domain released.
func TestUpstreamUseCasesKernel2RVlanMultiNS(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(scenario{tag: "rvms", kernelType: "auto", nodes: 2, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia, MTU: 1450}}, "upstream use-cases/Kernel2RVlanMultiNS")
		runKernel2RVlanMultiNS(t, sc)
	})
}

// multiNSVlan is one VLAN of the example: its endpoint's services and the tester's address.
type multiNSVlan struct {
	id       int
	endpoint string
	services []string
	cidr     string
	hostAddr netip.Prefix
	// hostIfname is the tester's interface on the VLAN (StartVlanHost).
	hostIfname string
}

// multiNSClient is one client pod of the example.
type multiNSClient struct {
	*domain.Client
	vlan *multiNSVlan
	node *domain.Node
	addr netip.Prefix
}

func runKernel2RVlanMultiNS(t *testing.T, sc scenario) {
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	untagged := &multiNSVlan{id: 0, endpoint: "nse-remote-vlan-ns1", services: []string{"private-bridge.ns-kernel2vlan-multins-1"},
		cidr: "172.10.1.0/24", hostAddr: netip.MustParsePrefix("172.10.1.254/24")}
	vlan300 := &multiNSVlan{id: 300, endpoint: "nse-remote-vlan-bg",
		services: []string{"blue-bridge.ns-kernel2vlan-multins-2", "green-bridge.ns-kernel2vlan-multins-2"},
		cidr:     "172.10.2.0/24", hostAddr: netip.MustParsePrefix("172.10.2.254/24")}
	vlan100 := &multiNSVlan{id: 100, endpoint: "nse-remote-vlan", services: []string{"kernel2rvlan-multins"},
		cidr: "172.10.0.0/24", hostAddr: netip.MustParsePrefix("172.10.0.254/24")}
	vlans := []*multiNSVlan{untagged, vlan300, vlan100}

	rep.step("tester and endpoints")
	var endpoints []*domain.VlanEndpoint
	for _, v := range vlans {
		var err error
		v.hostIfname, err = d.StartVlanHost(ctx, v.id, v.hostAddr)
		require.NoError(t, err)
		nse, err := d.StartVlanEndpoint(ctx, d.Nodes[0], v.endpoint, strings.Join(v.services, ","), v.cidr, v.id)
		require.NoError(t, err)
		endpoints = append(endpoints, nse)
	}
	idleBridges := map[*domain.Node][]uint32{}
	captures := map[*domain.Node]*capture{}
	for _, node := range d.Nodes {
		idleBridges[node] = bridgeDomains(ctx, t, d, node)
		captures[node] = startCapture(ctx, t, d.Topology.FabricNetns(), topology.TrunkPort(node.Node))
	}

	rep.step("connect: two clients of each service, one per node")
	groups := map[string][]*multiNSClient{}
	for i, group := range []struct {
		app, service string
		vlan         *multiNSVlan
	}{
		{"alpine-1", untagged.services[0], untagged},
		{"alpine-2", vlan300.services[0], vlan300},
		{"alpine-3", vlan300.services[1], vlan300},
		{"alpine-4", vlan100.services[0], vlan100},
	} {
		for n, node := range d.Nodes {
			client, connectErr := d.Connect(ctx, node, fmt.Sprintf("a%d-%d", i+1, n+1), fmt.Sprintf("kernel://%s/%s", group.service, clientIfname))
			require.NoError(t, connectErr)
			c := &multiNSClient{Client: client, vlan: group.vlan, node: node}
			c.requireOnVlan(t)
			groups[group.app] = append(groups[group.app], c)
		}
	}

	rep.step("namespace 1: MTU, the tester reaches the untagged clients from eth0 only")
	for _, c := range groups["alpine-1"] {
		c.requireTrunkMTU(t)
	}
	requireTesterReachesOnlyFrom(ctx, t, d, vlans, groups["alpine-1"])

	rep.step("namespace 2: MTU, the tester reaches blue and green from eth0.300 only")
	namespace2 := slices.Concat(groups["alpine-2"], groups["alpine-3"])
	for _, c := range namespace2 {
		c.requireTrunkMTU(t)
	}
	requireTesterReachesOnlyFrom(ctx, t, d, vlans, namespace2)
	for _, node := range d.Nodes {
		// The untagged bridge, and VLAN 300's for blue and green together (and VLAN 100's).
		require.Len(t, bridgeDomains(ctx, t, d, node), len(idleBridges[node])+3, "%s: a bridge domain per VLAN in use", node.Name)
	}

	rep.step("blue clients deleted: green still reached on VLAN 300")
	for _, c := range groups["alpine-2"] {
		require.NoError(t, c.Close(), "the Close of %s failed:\n%s", c.Name, c.Proc.LogTail(20))
		requireEventuallyEmpty(t, "pod of "+c.Name, c.Pod.Netns)
	}
	for _, node := range d.Nodes {
		require.Len(t, bridgeDomains(ctx, t, d, node), len(idleBridges[node])+3, "%s: VLAN 300's bridge domain is kept while green uses it", node.Name)
	}
	for _, c := range groups["alpine-3"] {
		requirePing(ctx, t, d.Trunk.HostNetns, vlan300.hostIfname, c.addr.String())
	}

	rep.step("namespace 3: MTU, the tester reaches the VLAN 100 clients from eth0.100 only")
	for _, c := range groups["alpine-4"] {
		c.requireTrunkMTU(t)
	}
	requireTesterReachesOnlyFrom(ctx, t, d, vlans, groups["alpine-4"])

	rep.step("every echo tagged with its VLAN on the trunk")
	for _, node := range d.Nodes {
		captures[node].stop(t)
	}
	for _, group := range groups {
		for _, c := range group {
			requireEchoesTagged(t, captures[c.node], c.addr.Addr(), c.vlan)
		}
	}

	rep.step("close leaves nothing")
	for _, app := range []string{"alpine-1", "alpine-3", "alpine-4"} {
		for _, c := range groups[app] {
			require.NoError(t, c.Close(), "the Close of %s failed:\n%s", c.Name, c.Proc.LogTail(20))
			requireEventuallyEmpty(t, "pod of "+c.Name, c.Pod.Netns)
		}
	}
	for _, node := range d.Nodes {
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
		requireBridgeDomainsBack(ctx, t, d, node, idleBridges[node])
	}
	rep.step("endpoints unregister")
	for _, nse := range endpoints {
		require.NoError(t, nse.Close())
		requireEventuallyUnregistered(ctx, t, d, nse.Name)
	}
}

// requireOnVlan requires c's connection to give it one address of its VLAN's subnet, with the
// subnet's length, held by its pod's nsm-1.
func (c *multiNSClient) requireOnVlan(t *testing.T) {
	t.Helper()
	require.Len(t, c.Connections, 1)
	srcAddrs := c.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs()
	require.Len(t, srcAddrs, 1, "%s: one address of %s", c.Name, c.vlan.cidr)
	c.addr = netip.MustParsePrefix(srcAddrs[0])
	require.Equal(t, netip.MustParsePrefix(c.vlan.cidr), c.addr.Masked(), "%s: the address is on its VLAN's subnet, with its length", c.Name)
	state, err := topology.Inspect(c.Pod.Netns)
	require.NoError(t, err)
	link, ok := state.Link(clientIfname)
	require.True(t, ok && link.Up, "pod of %s: no %s up\n%s", c.Name, clientIfname, state)
	require.Equal(t, []string{c.addr.String()}, link.Addrs, "pod of %s\n%s", c.Name, state)
}

// requireTrunkMTU is upstream's MTU check: c's nsm-1 has the MTU of its node's trunk device.
func (c *multiNSClient) requireTrunkMTU(t *testing.T) {
	t.Helper()
	trunk := readMTU(t, c.node.Netns, vlanDevice)
	require.Equal(t, trunk, readMTU(t, c.Pod.Netns, clientIfname), "%s's %s against %s's %s", c.Name, clientIfname, c.node.Name, vlanDevice)
}

func readMTU(t *testing.T, netns, ifname string) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", netns, "cat", filepath.Join("/sys/class/net", ifname, "mtu")).CombinedOutput()
	require.NoError(t, err, "%s: mtu of %s: %s", netns, ifname, out)
	return strings.TrimSpace(string(out))
}

// requireTesterReachesOnlyFrom is upstream's ping check for clients: the tester pings each from
// the interface on the client's VLAN, and must not reach it from the tester's other VLAN
// interfaces (one echo, one second, as upstream; those run together).
func requireTesterReachesOnlyFrom(ctx context.Context, t *testing.T, d *domain.Domain, vlans []*multiNSVlan, clients []*multiNSClient) {
	t.Helper()
	type wrongPing struct {
		client *multiNSClient
		from   string
		out    []byte
		err    error
	}
	var wrong []*wrongPing
	for _, c := range clients {
		for _, v := range vlans {
			if v != c.vlan {
				wrong = append(wrong, &wrongPing{client: c, from: v.hostIfname})
			}
		}
	}
	var wg sync.WaitGroup
	for _, w := range wrong {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.out, w.err = exec.CommandContext(ctx, "ip", "netns", "exec", d.Trunk.HostNetns,
				"ping", "-w", "1", "-c", "1", "-I", w.from, w.client.addr.Addr().String()).CombinedOutput()
		}()
	}
	wg.Wait()
	for _, w := range wrong {
		require.Error(t, w.err, "the tester reached %s (VLAN %d) from %s:\n%s", w.client.Name, w.client.vlan.id, w.from, w.out)
	}
	for _, c := range clients {
		requirePing(ctx, t, d.Trunk.HostNetns, c.vlan.hostIfname, c.addr.String())
	}
}

// requireEchoesTagged requires the capture on a node's trunk port to hold the tester's echo
// requests to addr and addr's replies, tagged with v's VLAN (untagged for VLAN 0), and no ICMP
// of addr otherwise tagged or untagged.
func requireEchoesTagged(t *testing.T, c *capture, addr netip.Addr, v *multiNSVlan) {
	t.Helper()
	// libpcap's `vlan` shifts what follows it, so the frames are counted per filter rather than
	// matched by one expression.
	untagged := fmt.Sprintf("icmp and host %s", addr)
	tagged := fmt.Sprintf("vlan and icmp and host %s", addr)
	right := fmt.Sprintf("vlan %d and icmp and host %s", v.id, addr)
	if v.id == 0 {
		right = untagged
	}
	frames := c.showEthernet(t, right)
	host := v.hostAddr.Addr()
	for _, flow := range []string{
		fmt.Sprintf("%s > %s: ICMP echo request", host, addr),
		fmt.Sprintf("%s > %s: ICMP echo reply", addr, host),
	} {
		require.GreaterOrEqual(t, strings.Count(frames, flow), 3, "%q on the trunk (%s):\n%s", flow, right, frames)
	}
	all := c.count(t, untagged) + c.count(t, tagged)
	require.Equal(t, c.count(t, right), all, "ICMP of %s not on VLAN %d:\n%s\n%s", addr, v.id,
		c.showEthernet(t, untagged), c.showEthernet(t, tagged))
}
