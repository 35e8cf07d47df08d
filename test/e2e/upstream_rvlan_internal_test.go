package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// use-cases/Kernel2RVlanInternal, on the remotevlan_vpp set-up (vlan_test.go): the set-up's
// remote vlan endpoint (e2e-nse-vlan, VLAN 100 via gw1) hands each client an address of
// 172.10.0.0/24 and one of 100:200::/64; two clients, one per node, reach each other through
// their nodes' trunk (ext_net1, MTU 1450). Upstream runs iperf3 between them: TCP and UDP, over
// IPv4 and IPv6, the server in one client and the client in the other. Here: pings both ways in
// each family, then upstream's four iperf3 runs (make tools installs iperf3); Close leaves
// nothing, every bridge domain released.
func TestUpstreamUseCasesKernel2RVlanInternal(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(scenario{tag: "rvin", kernelType: "auto", nodes: 2, realVPP: realVPP,
			vlanTrunk: &domain.VlanTrunk{Device: vlanDevice, Via: vlanVia, MTU: 1450}}, "upstream use-cases/Kernel2RVlanInternal")
		runKernel2RVlanInternal(t, sc)
	})
}

// rvlanInternalCIDRs are the set-up endpoint's prefixes, one per family.
var rvlanInternalCIDRs = []netip.Prefix{netip.MustParsePrefix("172.10.0.0/24"), netip.MustParsePrefix("100:200::/64")}

func runKernel2RVlanInternal(t *testing.T, sc scenario) {
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	nse, err := d.StartVlanEndpoint(ctx, d.Nodes[0], "nse-remote-vlan", vlanService,
		rvlanInternalCIDRs[0].String()+","+rvlanInternalCIDRs[1].String(), vlanID)
	require.NoError(t, err)

	rep.step("connect: a client on each node, an address of each family")
	type internalClient struct {
		vlanAttachment
		addrs []netip.Prefix
	}
	var clients []*internalClient
	for i, node := range d.Nodes {
		c := &internalClient{vlanAttachment: attachTo(ctx, t, d, node)}
		c.client, err = d.Connect(ctx, node, fmt.Sprintf("iperf1-s-%d", i+1), fmt.Sprintf("kernel://%s/%s", vlanService, clientIfname))
		require.NoError(t, err)
		require.Len(t, c.client.Connections, 1)
		for _, a := range c.client.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs() {
			c.addrs = append(c.addrs, netip.MustParsePrefix(a))
		}
		require.Len(t, c.addrs, len(rvlanInternalCIDRs), "%s: one address of each of %v", c.client.Name, rvlanInternalCIDRs)
		for f, cidr := range rvlanInternalCIDRs {
			require.Equal(t, cidr, c.addrs[f].Masked(), "%s: the address is on the VLAN's subnet, with its length", c.client.Name)
		}
		requireVPPHoldsVlanSubif(ctx, t, d, node)
		clients = append(clients, c)
	}

	rep.step("pings both ways in each family")
	for f := range rvlanInternalCIDRs {
		requirePing(ctx, t, clients[0].client.Pod.Netns, clientIfname, clients[1].addrs[f].String())
		requirePing(ctx, t, clients[1].client.Pod.Netns, clientIfname, clients[0].addrs[f].String())
	}

	rep.step("iperf3: TCP and UDP over IPv4 and IPv6")
	_, lookErr := exec.LookPath("iperf3")
	require.NoError(t, lookErr, "upstream's iperf3 runs need iperf3 (make tools installs it)")
	for _, run := range []struct {
		family       int
		udp          bool
		server, user *internalClient
	}{
		{0, false, clients[0], clients[1]},
		{0, true, clients[1], clients[0]},
		{1, false, clients[0], clients[1]},
		{1, true, clients[1], clients[0]},
	} {
		requireIperf3(ctx, t, run.server.client.Pod.Netns, run.user.client.Pod.Netns, run.server.addrs[run.family].Addr(), run.udp, 5)
	}

	requireVlanCloseLeavesNothing(ctx, t, d, rep, clients, nse)
}

// requireIperf3 is one of upstream's runs: `iperf3 -sD -B <addr> -1` in the server's pod, then
// `iperf3 -i0 -t <seconds> [-6] [-u] -c <addr>` in the other, which must succeed. The run's
// summary goes to the log: upstream checks the exit status only.
func requireIperf3(ctx context.Context, t *testing.T, serverNetns, clientNetns string, addr netip.Addr, udp bool, seconds int) {
	t.Helper()
	server := exec.CommandContext(ctx, "ip", "netns", "exec", serverNetns, "iperf3", "-s", "-B", addr.String(), "-1")
	require.NoError(t, server.Start())
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	args := []string{"netns", "exec", clientNetns, "iperf3", "-i0", "-t", strconv.Itoa(seconds), "-c", addr.String()}
	if addr.Is6() {
		args = append(args, "-6")
	}
	if udp {
		args = append(args, "-u")
	}
	var out []byte
	var err error
	// The server needs a moment to listen; iperf3 -c fails at once on a refused connection.
	for deadline := time.Now().Add(5 * time.Second); ; {
		out, err = exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err, "iperf3 %v to %s:\n%s", args[3:], addr, out)
	t.Logf("iperf3 %v to %s:\n%s", args[4:], addr, iperf3Summary(out))
}

// iperf3Summary is the sender and receiver lines of an iperf3 client's output: bitrate, and for
// UDP the datagrams lost.
func iperf3Summary(out []byte) string {
	var lines []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasSuffix(line, "sender") || strings.HasSuffix(line, "receiver") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}
