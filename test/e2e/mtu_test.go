package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

const (
	// askedMTU is what the client's connection context asks for where it asks (e2e-nsc's NSM_MTU):
	// below every path's own.
	askedMTU = 1400
	// vxlanOverheadV4 is what stock (sdk-vpp's vxlan mtu element) subtracts from the uplink's MTU
	// for a VXLAN tunnel between IPv4 tunnel addresses: outer IPv4 20, UDP 8, VXLAN 8, inner
	// Ethernet 14 and a possible 802.1Q tag 4.
	vxlanOverheadV4 = 54
)

// A client whose connection context asks for a smaller MTU than the path's, on one node over veth
// pairs: both pods' interfaces and VPP's interfaces of the connection get it, and a packet of
// exactly that size crosses both ways without fragmentation; on the simulator and on real VPP.
func TestMTUAskedOverVeth(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runMTU(t, scenario{report: "MTU asked by the client, veth", tag: "mtuveth", kernelType: "veth", linkType: "veth", nodes: 1, realVPP: realVPP}, askedMTU)
	})
}

// Client on node1, endpoint on node2 over VXLAN, the client asking for no MTU: the connection gets
// the uplink's MTU less VXLAN's overhead, as stock computes it, on both pods and the VXLAN tunnels,
// and a packet of exactly that size crosses both ways; on the simulator and on real VPP.
func TestMTUOverVxlan(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runMTU(t, scenario{report: "MTU over vxlan, overhead subtracted", tag: "mtuvx", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, realVPP: realVPP}, 0)
	})
}

// As TestMTUOverVxlan with the client asking for less than the tunnel carries: it gets what it
// asked for.
func TestMTUAskedOverVxlan(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runMTU(t, scenario{report: "MTU asked by the client, vxlan", tag: "mtuavx", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, realVPP: realVPP}, askedMTU)
	})
}

// runMTU connects a client asking for asked (0: nothing) and requires the connection's MTU on both
// pods and on every interface VPP holds for it, then full-size pings both ways, then a Close that
// leaves nothing.
func runMTU(t *testing.T, sc scenario, asked uint32) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR)
	require.NoError(t, err)
	var env []string
	if asked != 0 {
		env = append(env, "NSM_MTU="+strconv.Itoa(int(asked)))
	}
	client, err := d.StartClientWithEnv(d.Nodes[sc.clientNode], "nsc", env, fmt.Sprintf("kernel://%s/%s", service, clientIfname))
	require.NoError(t, err)
	require.NoError(t, client.WaitGranted(ctx))
	require.Len(t, client.Connections, 1)

	rep.step("connected: the connection's MTU")
	want := asked
	if sc.overVxlan {
		tunnelMTU := uplinkMTU(ctx, t, d, d.Nodes[sc.clientNode]) - vxlanOverheadV4
		if want == 0 || want > tunnelMTU {
			want = tunnelMTU
		}
	}
	got := client.Connections[0].GetContext().GetMTU()
	require.Equal(t, want, got, "the connection's MTU (asked %d, over VXLAN %t)", asked, sc.overVxlan)

	rep.step("connected: kernel state, ping")
	view := requireConnected(ctx, t, d, sc, client, nse)
	rep.step("the MTU on both pods and in VPP")
	require.Equal(t, want, podLinkMTU(t, client.Pod.Netns, clientIfname), "the client pod's %s MTU", clientIfname)
	require.Equal(t, want, podLinkMTU(t, nse.Pod.Netns, view.nseIfname), "the endpoint pod's %s MTU", view.nseIfname)
	for _, node := range d.Nodes {
		requireConnectionInterfacesMTU(ctx, t, d, node, want)
	}
	rep.step("full-size pings both ways, not fragmented")
	dst, src := addrOf(t, view.ipContext.GetDstIpAddrs()[0]), addrOf(t, view.ipContext.GetSrcIpAddrs()[0])
	requireFullSizePing(ctx, t, client.Pod.Netns, clientIfname, dst, want)
	requireFullSizePing(ctx, t, nse.Pod.Netns, view.nseIfname, src, want)

	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
}

// uplinkMTU is the IPv4 MTU of the interface of node's VPP that was there before any connection
// and carries the tunnel: the af-packet uplink the harness handed it.
func uplinkMTU(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) uint32 {
	t.Helper()
	mtus, err := d.VPPInterfaceMTUs(ctx, node)
	require.NoError(t, err)
	for _, i := range mtus {
		if i.Kind == "af_packet" && slices.Contains(node.IdleInterfaces, i.VPPInterface) {
			return i.L3[0]
		}
	}
	t.Fatalf("%s: no af-packet uplink in %s: %v", node.Name, d.VPPName(), mtus)
	return 0
}

// requireConnectionInterfacesMTU requires every interface node's VPP holds beyond its idle set (the
// connection's af-packet or VXLAN interfaces) to have want as its IPv4 and IPv6 MTU.
func requireConnectionInterfacesMTU(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, want uint32) {
	t.Helper()
	mtus, err := d.VPPInterfaceMTUs(ctx, node)
	require.NoError(t, err)
	var connection int
	for _, i := range mtus {
		if slices.Contains(node.IdleInterfaces, i.VPPInterface) {
			continue
		}
		connection++
		require.Equal(t, want, i.L3[1], "%s: IPv4 MTU of %s interface %s in %s: %+v", node.Name, i.Kind, i.Name, d.VPPName(), mtus)
		require.Equal(t, want, i.L3[2], "%s: IPv6 MTU of %s interface %s in %s: %+v", node.Name, i.Kind, i.Name, d.VPPName(), mtus)
	}
	require.NotZero(t, connection, "%s: %s holds no interface for the connection: %+v", node.Name, d.VPPName(), mtus)
}

func podLinkMTU(t *testing.T, netnsName, ifname string) uint32 {
	t.Helper()
	ns, err := netns.GetFromName(netnsName)
	require.NoError(t, err)
	defer func() { _ = ns.Close() }()
	handle, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	defer handle.Close()
	link, err := handle.LinkByName(ifname)
	require.NoError(t, err, "no %s in %s", ifname, netnsName)
	return uint32(link.Attrs().MTU)
}

// requireFullSizePing pings dst with IPv4 packets of exactly mtu bytes that may not be fragmented.
func requireFullSizePing(ctx context.Context, t *testing.T, netnsName, ifname, dst string, mtu uint32) {
	t.Helper()
	payload := strconv.Itoa(int(mtu) - 20 - 8) // IPv4 and ICMP headers
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netnsName,
		"ping", "-c", "3", "-i", "0.2", "-W", "2", "-M", "do", "-s", payload, "-I", ifname, dst).CombinedOutput()
	require.NoError(t, err, "ping of %d-byte packets, not fragmented, to %s from %s via %s:\n%s", mtu, dst, netnsName, ifname, out)
}
