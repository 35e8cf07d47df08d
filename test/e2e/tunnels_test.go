package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// The encrypted remote mechanisms: client on node1, endpoint on node2, a network service whose
// payload is IP (wireguard and IPsec carry IP, not Ethernet), the forwarders told to prefer the
// mechanism by NSM_MECHANISM_PRIORITY as a stock deployment is. A capture on the client node's
// port of the bridge between the nodes runs from before the Request to the end: it must hold no
// ICMP and no byte run of ping's payload. Once the pods have reached each other, 3 pings each
// way, every one answered, must show as at least 12 of the tunnel's packets on that port.

// plaintextEcho matches a ping's own packets in the clear. The nodes' kernels, which hold the
// tunnel IPs beside VPP, answer each tunnel packet with an ICMP port unreachable of their own.
const plaintextEcho = "icmp[icmptype] == icmp-echo or icmp[icmptype] == icmp-echoreply or icmp6[icmp6type] == icmp6-echo or icmp6[icmp6type] == icmp6-echoreply"

// noTrafficOnSimulator is why the encrypted scenarios do not run on the simulator.
const noTrafficOnSimulator = "vppsim records wireguard and IPsec interfaces but carries no traffic over them (test/vppsim/README.md); only real VPP can show encrypted packets"

// Wireguard between the nodes' tunnel IPs; real VPP only (its wireguard plugin).
func TestWireguardBetweenNodes(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runEncrypted(t, realVPP, wireguardTunnel("wg"))
	})
}

// IPsec keyed by IKEv2 between the nodes' tunnel IPs; real VPP only (its ikev2 and crypto
// plugins).
func TestIPsecIKEv2BetweenNodes(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runEncrypted(t, realVPP, ipsecTunnel("ipsec"))
	})
}

// Wireguard, then both forwarders SIGKILLed and started again beside their VPPs: the client heals,
// every ping crosses the tunnel again, and Close leaves no interface and no wireguard peer of
// either run; real VPP only.
func TestWireguardSurvivesForwarderRestart(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP != "" {
			// Run twice on 2 Dec 2026 on real VPP: both forwarders came back, the client was
			// granted again and each VPP held a wireguard interface. The client's pings cross
			// the rebuilt tunnel once its handshake completed (the wait below), but the
			// endpoint's ping to the client, through the interface name the endpoint pod had
			// before the restart, failed: not yet known whether the endpoint's side was rebuilt
			// under another name or the return path is broken. The peers after Close are not
			// checked yet.
			t.Skip("issue 23: wireguard across a forwarder restart: after the heal the endpoint's ping to the client fails")
		}
		tunnel := wireguardTunnel("wgr")
		tunnel.restart, tunnel.report = true, "wireguard between nodes, forwarder restart"
		runEncrypted(t, realVPP, tunnel)
	})
}

// The same over IPsec: Close leaves no interface and no IKEv2 profile of either run.
func TestIPsecSurvivesForwarderRestart(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP != "" {
			// Run twice on 2 Dec 2026 on real VPP, with what the wireguard variant saw: healed,
			// an IPsec interface in each VPP, the client's pings cross once the new SA is up,
			// the endpoint's ping to the client fails. Whether the previous run's IPsec
			// interface and IKEv2 profile are gone after Close (the journal now releases both)
			// is not reached yet.
			t.Skip("issue 23: IPsec across a forwarder restart: after the heal the endpoint's ping to the client fails")
		}
		tunnel := ipsecTunnel("ipsecr")
		tunnel.restart, tunnel.report = true, "IPsec (IKEv2) between nodes, forwarder restart"
		runEncrypted(t, realVPP, tunnel)
	})
}

func wireguardTunnel(tag string) encryptedTunnel {
	return encryptedTunnel{report: "wireguard between nodes, encrypted on the wire", tag: tag, priority: "WIREGUARD", kind: "wireguard",
		wireFilter: "udp port 51820", show: "show wireguard peer"}
}

func ipsecTunnel(tag string) encryptedTunnel {
	return encryptedTunnel{report: "IPsec (IKEv2) between nodes, encrypted on the wire", tag: tag, priority: "IPSEC", kind: "ipsec",
		wireFilter: "esp or udp port 4500", show: "show ikev2 profile"}
}

// The capture's control: over VXLAN, which does not encrypt, the same capture finds ping's payload
// in the tunnel's packets, so the encrypted scenarios' "not found" means something.
func TestVxlanCaptureShowsPlaintextPing(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := scenario{tag: "vxcap", kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, overVxlan: true, realVPP: realVPP}
		ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
		defer cancel()
		d := startDomain(ctx, t, sc)
		nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR)
		require.NoError(t, err)
		capture := startCapture(ctx, t, d.Topology.FabricNetns(), d.Nodes[sc.clientNode].FabricPort())
		client := connectClient(ctx, t, d, sc)
		requireConnected(ctx, t, d, sc, client, nse)
		capture.stop(t)
		require.GreaterOrEqual(t, capture.count(t, "udp port 4789"), 12, "VXLAN packets on the link between the nodes")
		require.True(t, bytes.Contains(capture.raw(t), pingPattern()), "ping's payload not found in the VXLAN packets on the link between the nodes")
		requireCloseLeavesNothing(ctx, t, d, client, nse)
	})
}

// encryptedTunnel is one encrypted remote mechanism as the scenario sees it.
type encryptedTunnel struct {
	// report is the scenario's row in `make compare`.
	report string
	tag    string
	// priority is the forwarders' NSM_MECHANISM_PRIORITY.
	priority string
	// kind is the interface kind each node's VPP must hold while connected.
	kind string
	// wireFilter matches the tunnel's packets on the wire (tcpdump's filter language).
	wireFilter string
	// show is the VPP CLI command that lists what the mechanism keeps beside its interface
	// (wireguard peers, IKEv2 profiles): after a restart, it must answer after Close as before
	// the connection.
	show string
	// restart SIGKILLs both forwarders once the pings crossed, starts them again beside their
	// VPPs, and requires the client to heal and every ping to cross again.
	restart bool
}

func runEncrypted(t *testing.T, realVPP string, tunnel encryptedTunnel) {
	if realVPP == "" {
		t.Skip(noTrafficOnSimulator)
	}
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{report: tunnel.report, tag: tunnel.tag, kernelType: "auto", nodes: 2, clientNode: 0, endpointNode: 1, realVPP: realVPP,
		forwarderEnv: []string{"NSM_MECHANISM_PRIORITY=" + tunnel.priority}}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	rep := reportOf(t)
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR, domain.WithPayload("IP"))
	require.NoError(t, err)

	idleShow := make([]string, len(d.Nodes))
	for n, node := range d.Nodes {
		if tunnel.restart {
			idleShow[n], err = d.VPPShow(ctx, node, tunnel.show)
			require.NoError(t, err)
		}
	}

	// The whole run's capture: no plaintext from the first packet on, handshakes included.
	wholeRun := startCapture(ctx, t, d.Topology.FabricNetns(), d.Nodes[sc.clientNode].FabricPort())
	client := connectClient(ctx, t, d, sc)
	rep.step("connected: each node's VPP holds the tunnel")
	for _, node := range d.Nodes {
		requireVPPHolds(ctx, t, d, node, tunnel.kind)
	}
	rep.step("connected: kernel state, ping")
	view := requireConnected(ctx, t, d, sc, client, nse)

	// Now that the keys are in place, every ping must cross the link, encrypted: a tunnel drops
	// what it is handed before its handshake completes, and ping counts a run with one reply a
	// success, so the pings above prove the path, not their number on the wire.
	rep.step("every ping answered, encrypted on the wire")
	counted := startCapture(ctx, t, d.Topology.FabricNetns(), d.Nodes[sc.clientNode].FabricPort())
	for _, dst := range view.ipContext.GetDstIpAddrs() {
		requireEveryPingAnswered(ctx, t, client.Pod.Netns, clientIfname, dst)
	}
	for _, src := range view.ipContext.GetSrcIpAddrs() {
		requireEveryPingAnswered(ctx, t, nse.Pod.Netns, view.nseIfname, src)
	}
	counted.awaitPackets(tunnel.wireFilter, 12, 5*time.Second)
	counted.stop(t)
	wholeRun.stop(t)

	tunnelPackets := counted.count(t, tunnel.wireFilter)
	require.GreaterOrEqual(t, tunnelPackets, 12, "the link between the nodes carried %d %s packets (%s) while the pods pinged each other 3 times each way, every ping answered; all it carried then:\n%s\nin the whole run:\n%s",
		tunnelPackets, tunnel.kind, tunnel.wireFilter, counted.show(t, ""), wholeRun.show(t, ""))
	require.Zero(t, wholeRun.count(t, plaintextEcho), "plaintext pings on the link between the nodes:\n%s", wholeRun.show(t, plaintextEcho))
	require.False(t, bytes.Contains(wholeRun.raw(t), pingPattern()), "ping's payload crossed the link between the nodes in the clear")
	t.Logf("capture on %s of %s: %d %s packets for 12 answered pings, %d in the whole run, no plaintext ping", d.Nodes[sc.clientNode].FabricPort(), d.Topology.FabricNetns(),
		tunnelPackets, tunnel.kind, wholeRun.count(t, tunnel.wireFilter))

	if tunnel.restart {
		rep.step("restart")
		restartedAt := time.Now()
		for _, node := range d.Nodes {
			require.NoError(t, d.RestartForwarder(ctx, node), "the forwarder did not start again beside its VPP")
		}
		rep.step("heal: client granted again")
		rep.recovered(requireHealed(t, restartedAt, client))
		rep.step("healed: every ping answered")
		for _, node := range d.Nodes {
			requireVPPHolds(ctx, t, d, node, tunnel.kind)
		}
		// The rebuilt tunnel drops what it is handed until its new handshake completes.
		dst := addrOf(t, view.ipContext.GetDstIpAddrs()[0])
		var out []byte
		waitUntil(t, time.Now().Add(healTimeout), 500*time.Millisecond, func() bool {
			out, err = exec.CommandContext(ctx, "ip", "netns", "exec", client.Pod.Netns, "ping", "-c", "1", "-W", "1", "-I", clientIfname, dst).CombinedOutput()
			return err == nil
		}, func() string {
			return fmt.Sprintf("no ping to %s crossed the rebuilt %s tunnel within %s of the heal:\n%s", dst, tunnel.kind, healTimeout, out)
		})
		for _, dst := range view.ipContext.GetDstIpAddrs() {
			requireEveryPingAnswered(ctx, t, client.Pod.Netns, clientIfname, dst)
		}
		for _, src := range view.ipContext.GetSrcIpAddrs() {
			requireEveryPingAnswered(ctx, t, nse.Pod.Netns, view.nseIfname, src)
		}
	}

	rep.step("close leaves nothing")
	requireCloseLeavesNothing(ctx, t, d, client, nse)
	for n, node := range d.Nodes {
		if !tunnel.restart {
			continue
		}
		var now string
		waitFor(t, 200*time.Millisecond, func() bool {
			now, err = d.VPPShow(ctx, node, tunnel.show)
			return err == nil && now == idleShow[n]
		}, func() string {
			return fmt.Sprintf("%s: %q after Close (error %v):\n%s\nbefore the connection:\n%s", node.Name, tunnel.show, err, now, idleShow[n])
		})
	}
}

// requireEveryPingAnswered pings 3 times and requires 3 answers (ping alone is content with one).
func requireEveryPingAnswered(ctx context.Context, t *testing.T, netns, ifname, cidr string) {
	t.Helper()
	out := requirePing(ctx, t, netns, ifname, cidr)
	require.Contains(t, out, " 3 received", "ping %s from %s via %s lost pings:\n%s", cidr, netns, ifname, out)
}

// pingPattern is a run of the bytes iputils ping fills its payload with after the timestamp
// (0x10, 0x11, ...): 40 of them, found in any plaintext echo of the default size.
func pingPattern() []byte {
	pattern := make([]byte, 40)
	for i := range pattern {
		pattern[i] = byte(0x10 + i)
	}
	return pattern
}

// capture is a tcpdump writing everything on one interface to a file.
type capture struct {
	cmd  *exec.Cmd
	file string
	done chan error
}

// startCapture starts tcpdump on ifname in netnsName and returns once it is listening.
func startCapture(ctx context.Context, t *testing.T, netnsName, ifname string) *capture {
	t.Helper()
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatalf("tcpdump is missing (scripts/install-tools.sh installs it): %v", err)
	}
	dir := t.TempDir()
	c := &capture{file: filepath.Join(dir, "link.pcap"), done: make(chan error, 1)}
	stderr := filepath.Join(dir, "tcpdump.log")
	logFile, err := os.Create(stderr)
	require.NoError(t, err)
	defer func() { _ = logFile.Close() }()
	// --immediate-mode hands tcpdump each packet as it comes: otherwise the kernel delivers them in
	// blocks, and what the last block held when the capture is stopped is lost (the last second's
	// pings). -U writes each packet at once; -Z root keeps tcpdump from dropping to a user that
	// cannot write the file.
	c.cmd = exec.CommandContext(ctx, "ip", "netns", "exec", netnsName, "tcpdump", "--immediate-mode", "-i", ifname, "-n", "-U", "-s", "0", "-Z", "root", "-w", c.file)
	c.cmd.Stderr = logFile
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() { c.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := os.ReadFile(stderr)
		if strings.Contains(string(out), "listening on") {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("tcpdump on %s in %s did not start listening:\n%s", ifname, netnsName, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the capture (SIGINT, as a person would) and waits for it to flush.
func (c *capture) stop(t *testing.T) {
	t.Helper()
	if c.cmd.ProcessState != nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// awaitPackets waits until the capture has written at least n packets matching filter, or until
// timeout: on a busy machine tcpdump may still be reading the last echoes when ping returns, and
// stopping it then loses them.
func (c *capture) awaitPackets(filter string, n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		// The file is being written: a last packet half written makes tcpdump complain, not lie.
		out, _ := exec.Command("tcpdump", "-r", c.file, "-n", filter).Output()
		if strings.Count(string(out), "\n") >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// count is how many captured packets match filter.
func (c *capture) count(t *testing.T, filter string) int {
	t.Helper()
	out := c.show(t, filter)
	if out == "" {
		return 0
	}
	return len(strings.Split(strings.TrimRight(out, "\n"), "\n"))
}

// show prints the captured packets that match filter, one a line.
func (c *capture) show(t *testing.T, filter string) string {
	t.Helper()
	out, err := exec.Command("tcpdump", "-r", c.file, "-n", filter).Output()
	require.NoError(t, err, "tcpdump -r %s %q", c.file, filter)
	return string(out)
}

func (c *capture) raw(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(c.file)
	require.NoError(t, err)
	return data
}
