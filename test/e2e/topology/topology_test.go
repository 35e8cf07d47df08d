package topology_test

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
}

func TestNodesReachEachOtherAndCloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	prefix := topology.RunPrefix("e2e") + "topo-"
	topo, err := topology.New(prefix, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })

	pod, err := topo.AddPod(topo.Nodes[0], "pod")
	require.NoError(t, err)
	names, err := topology.Namespaces(prefix)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{topo.Fabric(), topo.Nodes[0].Netns, topo.Nodes[1].Netns, pod.Netns}, names)

	out, err := exec.Command("ip", "netns", "exec", topo.Nodes[0].Netns,
		"ping", "-c", "1", "-W", "2", topo.Nodes[1].IP.Addr().String()).CombinedOutput()
	require.NoError(t, err, "node1 cannot reach node2 over the fabric:\n%s", out)

	state, err := topology.Inspect(pod.Netns)
	require.NoError(t, err)
	require.Len(t, state.Links, 1)
	require.Equal(t, "lo", state.Links[0].Name)
	require.True(t, state.Links[0].Up)
	require.Empty(t, state.Routes)
	require.Empty(t, state.Rules)

	nodeState, err := topology.Inspect(topo.Nodes[1].Netns)
	require.NoError(t, err)
	uplink, ok := nodeState.Link("eth0")
	require.True(t, ok, "node2 has no uplink:\n%s", nodeState)
	require.Equal(t, []string{topo.Nodes[1].IP.String()}, uplink.Addrs)

	require.NoError(t, topo.Close())
	names, err = topology.Namespaces(prefix)
	require.NoError(t, err)
	require.Empty(t, names)
}

func TestInspectSeesRoutesAndRules(t *testing.T) {
	requireRoot(t)
	prefix := topology.RunPrefix("e2e") + "insp-"
	topo, err := topology.New(prefix, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })
	netns := topo.Nodes[0].Netns
	for _, args := range [][]string{
		{"route", "add", "10.99.0.0/24", "via", topo.Nodes[0].IP.Addr().Next().String(), "dev", "eth0", "table", "300"},
		{"rule", "add", "from", "10.98.0.0/24", "lookup", "300", "priority", "1000", "protocol", "250"},
	} {
		out, cmdErr := exec.Command("ip", append([]string{"-n", netns}, args...)...).CombinedOutput()
		require.NoError(t, cmdErr, "%s", out)
	}
	state, err := topology.Inspect(netns)
	require.NoError(t, err)
	require.Equal(t, []topology.Route{{Table: 300, Dst: "10.99.0.0/24", Gw: topo.Nodes[0].IP.Addr().Next().String(), Link: "eth0", Protocol: 3}}, state.Routes)
	require.Equal(t, []topology.Rule{{Priority: 1000, Src: "10.98.0.0/24", Table: 300, Protocol: 250}}, state.Rules)
}

func TestSweepStaleDeletesOnlyDeadRuns(t *testing.T) {
	requireRoot(t)
	// A pid far above any real one stands for a run that is over.
	dead := "e2e-2147480000-sweep"
	alive := topology.RunPrefix("e2e") + "sweep"
	for _, name := range []string{dead, alive} {
		out, err := exec.Command("ip", "netns", "add", name).CombinedOutput()
		require.NoError(t, err, "%s", out)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	}
	require.NoError(t, topology.SweepStale("e2e"))
	names, err := topology.Namespaces("e2e-")
	require.NoError(t, err)
	require.NotContains(t, names, dead)
	require.Contains(t, names, alive)
}

// A ping across the fabric counts what a cut of a known length loses: the outage is measured from
// the replies' sequence numbers.
func TestPingMeasuresAnOutage(t *testing.T) {
	requireRoot(t)
	topo, err := topology.New(topology.RunPrefix("e2e")+"ping-", 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })
	ping, err := topology.StartPing(topo.Nodes[0].Netns, "eth0", topo.Nodes[1].IP.Addr().String(), 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(time.Second)
	cut := exec.Command("ip", "-n", topo.Nodes[1].Netns, "link", "set", "eth0", "down")
	require.NoError(t, cut.Run())
	time.Sleep(time.Second)
	require.NoError(t, exec.Command("ip", "-n", topo.Nodes[1].Netns, "link", "set", "eth0", "up").Run())
	time.Sleep(time.Second)
	result, err := ping.Stop()
	require.NoError(t, err)
	require.GreaterOrEqual(t, result.Sent, 45, "20 per second for three seconds: %s", result)
	require.Greater(t, result.Lost(), 10, result.String())
	require.InDelta(t, time.Second.Seconds(), result.LongestOutage.Seconds(), 0.6, result.String())
}

// A request whose reply is still on the way when the ping is stopped is not lost. ping, interrupted,
// counts it as unanswered, which made a healthy data path look like it dropped a packet now and
// then (TestForwarderRestartOverVeth/vpp, "1 of 85 lost").
func TestPingCountsNoRequestWhoseReplyIsOnTheWay(t *testing.T) {
	requireRoot(t)
	topo, err := topology.New(topology.RunPrefix("e2e")+"slow-", 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })
	answerEchoesLate(t, topo.Nodes[1].Netns, 300*time.Millisecond)
	ping, err := topology.StartPing(topo.Nodes[0].Netns, "eth0", topo.Nodes[1].IP.Addr().String(), 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(time.Second)
	result, err := ping.Stop()
	require.NoError(t, err)
	require.GreaterOrEqual(t, result.Sent, 15, "20 per second for a second: %s", result)
	require.Zero(t, result.Lost(), "six replies were on the way when the ping was stopped: %s", result)
}

// answerEchoesLate has the named namespace answer echo requests itself, each after delay, in place
// of its kernel.
func answerEchoesLate(t *testing.T, netnsName string, delay time.Duration) {
	require.NoError(t, exec.Command("ip", "netns", "exec", netnsName, "sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1").Run())
	conn := listenICMPIn(t, netnsName)
	t.Cleanup(func() { _ = conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, peer, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			request, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || request.Type != ipv4.ICMPTypeEcho {
				continue
			}
			reply, err := (&icmp.Message{Type: ipv4.ICMPTypeEchoReply, Body: request.Body}).Marshal(nil)
			if err != nil {
				continue
			}
			time.AfterFunc(delay, func() { _, _ = conn.WriteTo(reply, peer) })
		}
	}()
}

// listenICMPIn opens a raw ICMP socket in the named namespace; a socket stays in the namespace it
// was opened in. Should the thread fail to come back, it stays locked and ends with the test.
func listenICMPIn(t *testing.T, netnsName string) net.PacketConn {
	runtime.LockOSThread()
	here, err := netns.Get()
	require.NoError(t, err)
	defer here.Close()
	there, err := netns.GetFromName(netnsName)
	require.NoError(t, err)
	defer there.Close()
	require.NoError(t, netns.Set(there))
	conn, openErr := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	require.NoError(t, netns.Set(here))
	runtime.UnlockOSThread()
	require.NoError(t, openErr)
	return conn
}
