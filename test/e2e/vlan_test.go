package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The remote vlan mechanism as NSM's remotevlan_vpp example runs it (deployments-k8s v1.18,
// use case Kernel2RVlanBreakout): each node has a second NIC on a switch outside the cluster
// (here a veth named as the example's ext_net1, plugged into a bridge), the forwarders'
// NSM_DEVICE_SELECTOR_FILE maps the label via: gw1 to it, and an endpoint that takes no part in
// the data path (e2e-nse-vlan, as nse-remote-vlan) answers the vlan mechanism with VLAN 100 and
// that label. The forwarder bridges the client's kernel interface to a VLAN sub-interface of the
// NIC; the service is a host on that VLAN of the switch (the example's tester container, with
// eth0.100; here e2e-vlanhost, as this kernel has no 802.1Q links). Client and host ping each other; a capture on the node's port of the switch must
// show every ping tagged with VLAN 100 and none untagged. Close must then leave the client's pod,
// the node and VPP as they were before the connection.
const (
	vlanService = "kernel2rvlan"
	vlanID      = 100
	// vlanDevice and vlanVia are the example's device and label.
	vlanDevice = "ext_net1"
	vlanVia    = "gw1"
	// vlanCIDR is the subnet of the VLAN: the endpoint hands clients addresses of it, the host on
	// the switch has vlanHostAddr.
	vlanCIDR = "172.16.210.0/24"
)

var vlanHostAddr = netip.MustParsePrefix("172.16.210.254/24")

// Client on node1, the VLAN's host on the switch; on the simulator and on real VPP.
func TestRemoteVlanToHostOnTrunk(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runRemoteVlan(t, scenario{report: "remote vlan to a host on the trunk", tag: "vlan", kernelType: "auto", nodes: 1, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia}}, false)
	})
}

// The same, with the forwarder SIGKILLed and started again beside its VPP, which keeps running
// (the trunk's af_packet interface with it): the new forwarder must start, the client heal, and
// the pings cross the VLAN again; Close must then leave no bridge domain, although sdk-vpp's
// l2bridgedomain, which made the first one, kept it in the dead run's memory only (the journal
// records it); on the simulator and on real VPP.
func TestRemoteVlanSurvivesForwarderRestart(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runRemoteVlan(t, scenario{report: "remote vlan, forwarder restart", tag: "vlanr", kernelType: "auto", nodes: 1, realVPP: realVPP,
			requestTimeout: crashRequestTimeout, vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia}}, true)
	})
}

// A client on each of two nodes (the example's Kernel2RVlanInternal): the clients reach each
// other, and the host, over the VLAN; on the simulator and on real VPP.
func TestRemoteVlanBetweenNodes(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runRemoteVlan(t, scenario{report: "remote vlan between clients on two nodes", tag: "vlan2", kernelType: "auto", nodes: 2, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia}}, false)
	})
}

// vlanAttachment is a client on a VLAN, on its node.
type vlanAttachment struct {
	client *domain.Client
	node   *domain.Node
	// idleBridges are its node VPP's bridge domains before it connected.
	idleBridges []uint32
}

// attachment lets requireVlanCloseLeavesNothing take any client type that embeds it.
func (a *vlanAttachment) attachment() *vlanAttachment { return a }

// attachTo is a client about to connect on node, with node's bridge domains as they are now.
func attachTo(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) vlanAttachment {
	return vlanAttachment{node: node, idleBridges: bridgeDomains(ctx, t, d, node)}
}

// vlanClient is one client of the remote vlan scenario, on its node.
type vlanClient struct {
	vlanAttachment
	addr    netip.Prefix
	capture *capture
}

// runRemoteVlan connects one client on each node of sc to the VLAN, and requires every client
// and the host on the VLAN to ping each other, tagged on the trunk; with restart, then every
// forwarder is SIGKILLed and started again, and the clients must heal and ping the host again.
func runRemoteVlan(t *testing.T, sc scenario, restart bool) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	hostIfname, err := d.StartVlanHost(ctx, vlanID, vlanHostAddr)
	require.NoError(t, err)
	nse, err := d.StartVlanEndpoint(ctx, d.Nodes[0], "nse-vlan", vlanService, vlanCIDR, vlanID)
	require.NoError(t, err)

	rep.step("connect")
	var clients []*vlanClient
	for i, node := range d.Nodes {
		c := &vlanClient{vlanAttachment: attachTo(ctx, t, d, node)}
		c.capture = startCapture(ctx, t, d.Topology.FabricNetns(), topology.TrunkPort(node.Node))
		c.client, err = d.Connect(ctx, node, fmt.Sprintf("nsc%d", i+1), fmt.Sprintf("kernel://%s/%s", vlanService, clientIfname))
		require.NoError(t, err)
		require.Len(t, c.client.Connections, 1)
		conn := c.client.Connections[0]
		require.Equal(t, clientIfname, conn.GetMechanism().GetParameters()[common.InterfaceNameKey])
		srcAddrs := conn.GetContext().GetIpContext().GetSrcIpAddrs()
		require.Len(t, srcAddrs, 1, "the endpoint's IPAM should give the client one address of %s", vlanCIDR)
		c.addr = netip.MustParsePrefix(srcAddrs[0])
		require.Equal(t, netip.MustParsePrefix(vlanCIDR), c.addr.Masked(), "the client's address is on the VLAN's subnet, with its length")
		clients = append(clients, c)
	}

	rep.step("connected: the clients' addresses, VPP's sub-interfaces")
	for _, c := range clients {
		clientState, inspectErr := topology.Inspect(c.client.Pod.Netns)
		require.NoError(t, inspectErr)
		link, ok := clientState.Link(clientIfname)
		require.True(t, ok, "no %s in the pod of %s\n%s", clientIfname, c.client.Name, clientState)
		require.Contains(t, link.Addrs, c.addr.String(), "pod of %s\n%s", c.client.Name, clientState)
		requireVPPHoldsVlanSubif(ctx, t, d, c.node)
		require.Greater(t, len(bridgeDomains(ctx, t, d, c.node)), len(c.idleBridges), "sdk-vpp's vlan mechanism bridges the client to the sub-interface")
	}

	rep.step("ping both ways, tagged on the trunk")
	for _, c := range clients {
		requirePing(ctx, t, c.client.Pod.Netns, clientIfname, vlanHostAddr.String())
		requirePing(ctx, t, d.Trunk.HostNetns, hostIfname, c.addr.String())
		for _, other := range clients {
			if other != c {
				requirePing(ctx, t, c.client.Pod.Netns, clientIfname, other.addr.String())
			}
		}
	}
	for _, c := range clients {
		// Each pair pinged 3 times each way: 12 echoes on a port per pair its node is in.
		c.capture.awaitPackets(fmt.Sprintf("vlan %d and icmp", vlanID), 12*len(clients), 5*time.Second)
		c.capture.stop(t)
	}
	for _, c := range clients {
		requireTaggedPings(t, c.capture, c.addr.Addr(), vlanHostAddr.Addr())
		for _, other := range clients {
			if other != c {
				// Between two nodes every echo crosses both nodes' trunk ports.
				requireTaggedPings(t, c.capture, c.addr.Addr(), other.addr.Addr())
			}
		}
	}
	t.Logf("%s on %s: %d client(s) and the host on VLAN %d ping each other, tagged on the trunk", d.Forwarder().Name, d.VPPName(), len(clients), vlanID)

	if restart {
		rep.step("restart")
		restartedAt := time.Now()
		for _, node := range d.Nodes {
			require.NoError(t, d.RestartForwarder(ctx, node), "the forwarder did not start again beside its VPP")
		}
		rep.step("heal: clients granted again")
		var healClients []*domain.Client
		for _, c := range clients {
			healClients = append(healClients, c.client)
		}
		rep.recovered(requireHealed(t, restartedAt, healClients...))
		rep.step("healed: ping the host")
		for _, c := range clients {
			requirePing(ctx, t, c.client.Pod.Netns, clientIfname, vlanHostAddr.String())
			requirePing(ctx, t, d.Trunk.HostNetns, hostIfname, c.addr.String())
		}
	}

	requireVlanCloseLeavesNothing(ctx, t, d, rep, clients, nse)
}

// requireVlanCloseLeavesNothing closes every client and then the endpoint: each client's pod
// empty, every node's VPP and namespace clean, every node's bridge domains as before the
// client connected, the endpoint unregistered.
func requireVlanCloseLeavesNothing[C interface{ attachment() *vlanAttachment }](ctx context.Context, t *testing.T, d *domain.Domain, rep *report, clients []C, nse *domain.VlanEndpoint) {
	t.Helper()
	rep.step("close leaves nothing")
	for _, c := range clients {
		a := c.attachment()
		require.NoError(t, a.client.Close(), "the Close of %s failed:\n%s", a.client.Name, a.client.Proc.LogTail(20))
		requireEventuallyEmpty(t, "pod of "+a.client.Name, a.client.Pod.Netns)
	}
	for _, n := range d.Nodes {
		requireVPPClean(ctx, t, d, n)
		requireNodeKernelClean(t, n)
	}
	for _, c := range clients {
		requireBridgeDomainsBack(ctx, t, d, c.attachment().node, c.attachment().idleBridges)
	}
	rep.step("endpoint unregisters")
	require.NoError(t, nse.Close())
	requireEventuallyUnregistered(ctx, t, d, nse.Name)
}

// requireVPPHoldsVlanSubif requires node's VPP to hold a sub-interface of the trunk device for
// vlanID, which is what sdk-vpp's vlan mechanism creates.
func requireVPPHoldsVlanSubif(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) {
	t.Helper()
	requireVPPHoldsSubif(ctx, t, d, node, vlanID)
}

// requireVPPHoldsSubif requires node's VPP to hold a sub-interface of the trunk device for id.
func requireVPPHoldsSubif(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, id int) {
	t.Helper()
	interfaces, err := d.VPPInterfaces(ctx, node)
	require.NoError(t, err)
	want := fmt.Sprintf("host-%s.%d", vlanDevice, id)
	for _, i := range interfaces {
		if i.Kind == "subif" && i.Name == want {
			return
		}
	}
	t.Fatalf("%s: no sub-interface %s in %s: %v", node.Name, want, d.VPPName(), interfaces)
}

// requireTaggedPings requires the capture on a node's trunk port to hold the three echo requests
// and three replies of a ping each way between a and b, each frame tagged with vlanID, and no
// ICMP frame without a tag.
func requireTaggedPings(t *testing.T, c *capture, a, b netip.Addr) {
	t.Helper()
	tagged := c.showEthernet(t, fmt.Sprintf("vlan %d and icmp", vlanID))
	vlanField := fmt.Sprintf("vlan %d,", vlanID)
	for _, want := range []struct{ from, to netip.Addr }{{a, b}, {b, a}} {
		for _, kind := range []string{"ICMP echo request", "ICMP echo reply"} {
			flow := fmt.Sprintf("%s > %s: %s", want.from, want.to, kind)
			seen := 0
			for _, line := range strings.Split(tagged, "\n") {
				if strings.Contains(line, vlanField) && strings.Contains(line, flow) {
					seen++
				}
			}
			require.GreaterOrEqual(t, seen, 3, "%q tagged with VLAN %d on the trunk:\n%s", flow, vlanID, tagged)
		}
	}
	require.Zero(t, c.count(t, "icmp"), "untagged ICMP on the trunk:\n%s", c.showEthernet(t, "icmp"))
	t.Logf("trunk capture, VLAN %d:\n%s", vlanID, tagged)
}

// showEthernet prints the captured frames that match filter with their link-level header (the
// VLAN tag included), one a line.
func (c *capture) showEthernet(t *testing.T, filter string) string {
	t.Helper()
	out, err := exec.Command("tcpdump", "-r", c.file, "-n", "-e", filter).Output()
	require.NoError(t, err, "tcpdump -r %s -e %q", c.file, filter)
	return string(out)
}

// requireBridgeDomainsBack waits until node's VPP holds the bridge domains idle again, those it
// held before the scenario's connections.
func requireBridgeDomainsBack(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, idle []uint32) {
	t.Helper()
	waitFor(t, 200*time.Millisecond, func() bool { return slices.Equal(bridgeDomains(ctx, t, d, node), idle) },
		func() string {
			return fmt.Sprintf("%s: bridge domains after Close %v, before %v", node.Name, bridgeDomains(ctx, t, d, node), idle)
		})
}

// bridgeDomains are the bridge domains of node's VPP.
func bridgeDomains(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) []uint32 {
	t.Helper()
	ids, err := d.VPPBridgeDomains(ctx, node)
	require.NoError(t, err)
	return ids
}
