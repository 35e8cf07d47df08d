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
		runRemoteVlan(t, scenario{report: "remote vlan to a host on the trunk", tag: "vlan", kernelType: "auto", nodes: 1, clientNode: 0, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia}})
	})
}

func runRemoteVlan(t *testing.T, sc scenario) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	rep := reportOf(t)
	node := d.Nodes[sc.clientNode]
	hostIfname, err := d.StartVlanHost(ctx, vlanID, vlanHostAddr)
	require.NoError(t, err)
	nse, err := d.StartVlanEndpoint(ctx, node, "nse-vlan", vlanService, vlanCIDR, vlanID)
	require.NoError(t, err)

	idleBridges := bridgeDomains(ctx, t, d, node)
	rep.step("connect")
	capture := startCapture(ctx, t, d.Topology.FabricNetns(), topology.TrunkPort(node.Node))
	client, err := d.Connect(ctx, node, "nsc", fmt.Sprintf("kernel://%s/%s", vlanService, clientIfname))
	require.NoError(t, err)
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]
	require.Equal(t, clientIfname, conn.GetMechanism().GetParameters()[common.InterfaceNameKey])
	srcAddrs := conn.GetContext().GetIpContext().GetSrcIpAddrs()
	require.Len(t, srcAddrs, 1, "the endpoint's IPAM should give the client one address of %s", vlanCIDR)
	clientAddr := netip.MustParsePrefix(srcAddrs[0])
	require.Equal(t, netip.MustParsePrefix(vlanCIDR), clientAddr.Masked(), "the client's address is on the VLAN's subnet, with its length")

	rep.step("connected: the client's address, VPP's sub-interface")
	clientState, err := topology.Inspect(client.Pod.Netns)
	require.NoError(t, err)
	link, ok := clientState.Link(clientIfname)
	require.True(t, ok, "no %s in the client pod\n%s", clientIfname, clientState)
	require.Contains(t, link.Addrs, clientAddr.String(), "client pod\n%s", clientState)
	requireVPPHoldsVlanSubif(ctx, t, d, node)
	if d.RealVPP() {
		require.Greater(t, len(bridgeDomains(ctx, t, d, node)), len(idleBridges), "sdk-vpp's vlan mechanism bridges the client to the sub-interface")
	}

	rep.step("ping both ways, tagged on the trunk")
	requirePing(ctx, t, client.Pod.Netns, clientIfname, vlanHostAddr.String())
	requirePing(ctx, t, d.Trunk.HostNetns, hostIfname, clientAddr.String())
	capture.stop(t)
	requireTaggedPings(t, capture, clientAddr.Addr(), vlanHostAddr.Addr())
	t.Logf("%s on %s: the client and the host on VLAN %d ping each other, tagged on the trunk", d.Forwarder().Name, d.VPPName(), vlanID)

	rep.step("close leaves nothing")
	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	for _, n := range d.Nodes {
		requireVPPClean(ctx, t, d, n)
		requireNodeKernelClean(t, n)
	}
	if d.RealVPP() {
		waitFor(t, 200*time.Millisecond, func() bool { return slices.Equal(bridgeDomains(ctx, t, d, node), idleBridges) },
			func() string {
				return fmt.Sprintf("%s: bridge domains after Close %v, before %v", node.Name, bridgeDomains(ctx, t, d, node), idleBridges)
			})
	}
	rep.step("endpoint unregisters")
	require.NoError(t, nse.Close())
	requireEventuallyUnregistered(ctx, t, d, nse.Name)
}

// requireVPPHoldsVlanSubif requires node's VPP to hold a sub-interface of the trunk device for
// vlanID, which is what sdk-vpp's vlan mechanism creates.
func requireVPPHoldsVlanSubif(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) {
	t.Helper()
	interfaces, err := d.VPPInterfaces(ctx, node)
	require.NoError(t, err)
	want := fmt.Sprintf("host-%s.%d", vlanDevice, vlanID)
	for _, i := range interfaces {
		if i.Kind == "subif" && i.Name == want {
			return
		}
	}
	t.Fatalf("%s: no sub-interface %s in %s: %v", node.Name, want, d.VPPName(), interfaces)
}

// requireTaggedPings requires the capture on the node's trunk port to hold the three echo
// requests and three replies of each ping, each frame tagged with vlanID, and no ICMP frame
// without a tag.
func requireTaggedPings(t *testing.T, c *capture, clientAddr, hostAddr netip.Addr) {
	t.Helper()
	tagged := c.showEthernet(t, fmt.Sprintf("vlan %d and icmp", vlanID))
	vlanField := fmt.Sprintf("vlan %d,", vlanID)
	for _, want := range []struct{ from, to netip.Addr }{{clientAddr, hostAddr}, {hostAddr, clientAddr}} {
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

// bridgeDomains are the bridge domains of node's VPP; nil on the simulator, which does not list
// them.
func bridgeDomains(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) []uint32 {
	t.Helper()
	if !d.RealVPP() {
		return nil
	}
	ids, err := d.VPPBridgeDomains(ctx, node)
	require.NoError(t, err)
	return ids
}
