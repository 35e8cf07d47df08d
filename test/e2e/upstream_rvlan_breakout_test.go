package e2e_test

import (
	"fmt"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// use-cases/Kernel2RVlanBreakout, on the remotevlan_vpp set-up (vlan_test.go): the set-up's
// remote vlan endpoint answers kernel2rvlan-breakout with VLAN 1000 via gw1 and hands out
// addresses of 172.10.0.0/24 (and 100:200::/64); two clients, one per node (upstream's two
// iperf1-s replicas with anti-affinity), get nsm-1 bridged to VLAN 1000 of their node's trunk
// (ext_net1, MTU 1450). Upstream's tester is a container on that network with eth0.1000 and
// 172.10.0.254/24; here e2e-vlanhost gives the trunk's host the same. Upstream's steps, in its
// order: the tester runs iperf3 to each client (TCP for 25 s, then UDP for 5 s), then each
// client runs iperf3 to the tester (TCP, then UDP, 5 s each); each run must exit 0 (as upstream,
// UDP loss is logged, not checked). Upstream's last loop runs its UDP client in the second pod
// for both iterations (`${NSCS[1]}`); here each client runs its own. Beyond upstream: the
// tester and each client ping each other first, every echo tagged with VLAN 1000 on the node's
// trunk port; Close leaves nothing, every bridge domain released.
func TestUpstreamUseCasesKernel2RVlanBreakout(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(scenario{tag: "rvbo", kernelType: "auto", nodes: 2, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia, MTU: 1450}}, "upstream use-cases/Kernel2RVlanBreakout")
		runKernel2RVlanBreakout(t, sc)
	})
}

const (
	breakoutService = "kernel2rvlan-breakout"
	breakoutVlanID  = 1000
	// breakoutTime is the scenario's budget: upstream's iperf3 runs alone take 80 s.
	breakoutTime = scenarioTime + 2*time.Minute
)

// breakoutTester is upstream's tester's address on eth0.1000.
var breakoutTester = netip.MustParsePrefix("172.10.0.254/24")

func runKernel2RVlanBreakout(t *testing.T, sc scenario) {
	ctx, d, rep := startScenario(t, sc, breakoutTime)

	rep.step("tester on VLAN 1000, the set-up's endpoint")
	testerIfname, err := d.StartVlanHost(ctx, breakoutVlanID, breakoutTester)
	require.NoError(t, err)
	nse, err := d.StartVlanEndpoint(ctx, d.Nodes[0], "nse-remote-vlan", breakoutService,
		rvlanInternalCIDRs[0].String()+","+rvlanInternalCIDRs[1].String(), breakoutVlanID)
	require.NoError(t, err)
	vlan := &multiNSVlan{id: breakoutVlanID, hostAddr: breakoutTester, hostIfname: testerIfname}

	rep.step("connect: a client on each node")
	var clients []*vlanClient
	for i, node := range d.Nodes {
		c := &vlanClient{vlanAttachment: attachTo(ctx, t, d, node)}
		c.capture = startCapture(ctx, t, d.Topology.FabricNetns(), topology.TrunkPort(node.Node))
		c.client, err = d.Connect(ctx, node, fmt.Sprintf("iperf1-s-%d", i+1), fmt.Sprintf("kernel://%s/%s", breakoutService, clientIfname))
		require.NoError(t, err)
		require.Len(t, c.client.Connections, 1)
		// Upstream takes the client's address with `ip -4 addr show nsm-1`.
		srcAddrs := c.client.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs()
		require.NotEmpty(t, srcAddrs, "%s: no address of %s", c.client.Name, rvlanInternalCIDRs[0])
		c.addr = netip.MustParsePrefix(srcAddrs[0])
		require.Equal(t, rvlanInternalCIDRs[0], c.addr.Masked(), "%s: the address is on the tester's subnet, with its length", c.client.Name)
		requireVPPHoldsSubif(ctx, t, d, node, breakoutVlanID)
		clients = append(clients, c)
	}

	rep.step("the tester and each client ping each other, tagged with VLAN 1000 on the trunk")
	for _, c := range clients {
		requirePing(ctx, t, d.Trunk.HostNetns, testerIfname, c.addr.String())
		requirePing(ctx, t, c.client.Pod.Netns, clientIfname, breakoutTester.String())
	}
	for _, c := range clients {
		// Two pings of 3 echoes: 12 frames on the client's node's port.
		c.capture.awaitPackets(fmt.Sprintf("vlan %d and icmp", breakoutVlanID), 12, 5*time.Second)
		c.capture.stop(t)
		requireEchoesTagged(t, c.capture, c.addr.Addr(), vlan)
	}

	rep.step("iperf3: the tester to each client, TCP 25 s then UDP 5 s")
	_, lookErr := exec.LookPath("iperf3")
	require.NoError(t, lookErr, "upstream's iperf3 runs need iperf3 (make tools installs it)")
	for _, udp := range []bool{false, true} {
		seconds := 25
		if udp {
			seconds = 5
		}
		for _, c := range clients {
			requireIperf3(ctx, t, c.client.Pod.Netns, d.Trunk.HostNetns, c.addr.Addr(), udp, seconds)
		}
	}
	rep.step("iperf3: each client to the tester, TCP then UDP, 5 s")
	for _, udp := range []bool{false, true} {
		for _, c := range clients {
			requireIperf3(ctx, t, d.Trunk.HostNetns, c.client.Pod.Netns, breakoutTester.Addr(), udp, 5)
		}
	}

	requireVlanCloseLeavesNothing(ctx, t, d, rep, clients, nse)
}
