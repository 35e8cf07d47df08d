package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Memif as NSM runs it for a client whose data plane is a VPP of its own (cmd-nsc-vpp,
// deployments-k8s v1.18 use cases Memif2Kernel and, across nodes, Memif2Ethernet2Kernel): the
// client's pod runs its own VPP, the forwarder serves a memif socket in that pod and
// cross-connects it to a kernel interface in the endpoint's pod, directly or over VXLAN to the
// endpoint's node. The client's VPP pings the endpoint and the endpoint pings the client's VPP;
// Close must then leave both pods, the node, the forwarder's VPP and the client's VPP as they
// were before the connection.

// noMemifOnSimulator is why the memif scenario does not run on the simulator.
const noMemifOnSimulator = "vppsim records memif interfaces but no peer ever connects to them (test/vppsim/README.md); only real VPP carries memif traffic"

// Client with its own VPP and the kernel endpoint on node1; real VPP only.
func TestLocalMemifFromClientVPPToKernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP == "" {
			t.Skip(noMemifOnSimulator)
		}
		runMemif(t, scenario{report: "memif from a client's own VPP to kernel, one node", tag: "memif", kernelType: "auto", nodes: 1, realVPP: realVPP}, false)
	})
}

// The one-node scenario with the forwarder SIGKILLed and started again beside its VPP once the
// pings crossed: the client's VPP must reach the endpoint again, and Close leave the forwarder's
// VPP without the memif interface or socket of either run; real VPP only.
func TestLocalMemifSurvivesForwarderRestart(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP == "" {
			t.Skip(noMemifOnSimulator)
		}
		runMemif(t, scenario{report: "memif from a client's own VPP to kernel, forwarder restart", tag: "memifr", kernelType: "auto", nodes: 1,
			requestTimeout: crashRequestTimeout, realVPP: realVPP}, true)
	})
}

// Client with its own VPP on node1, the kernel endpoint on node2: memif, then VXLAN between the
// nodes, then kernel; real VPP only.
func TestRemoteMemifFromClientVPPToKernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP == "" {
			t.Skip(noMemifOnSimulator)
		}
		runMemif(t, scenario{report: "memif from a client's own VPP to kernel, two nodes", tag: "rmemif", kernelType: "auto", nodes: 2,
			clientNode: 0, endpointNode: 1, overVxlan: true, realVPP: realVPP}, false)
	})
}

// runMemif connects the client's VPP to the kernel endpoint over memif and pings both ways; with
// restart, every forwarder is then SIGKILLed and started again and the client's VPP must reach
// the endpoint again. Close must leave every VPP, pod and node as before.
func runMemif(t *testing.T, sc scenario, restart bool) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, d, rep := startScenario(t, sc, scenarioTime)
	node := d.Nodes[sc.clientNode]
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse", service, endpointCIDR)
	require.NoError(t, err)

	var idleMemif string
	if restart {
		idleMemif, err = d.VPPShow(ctx, node, "show memif")
		require.NoError(t, err)
	}

	rep.step("connect")
	client, err := d.ConnectVPPClient(ctx, node, "nsc-vpp", fmt.Sprintf("memif://%s/memif0", service))
	require.NoError(t, err, "the client with its own VPP was not granted its connection")
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]
	require.Equal(t, memifmech.MECHANISM, conn.GetMechanism().GetType())
	ipContext := conn.GetContext().GetIpContext()
	require.NotEmpty(t, ipContext.GetSrcIpAddrs(), "the endpoint's IPAM gave the client no address")
	require.NotEmpty(t, ipContext.GetDstIpAddrs(), "the endpoint's IPAM gave itself no address")

	rep.step("connected: memif in both VPPs, the endpoint's kernel interface")
	requireVPPHolds(ctx, t, d, node, "memif")
	if sc.overVxlan {
		for _, n := range d.Nodes {
			requireVPPHolds(ctx, t, d, n, "vxlan")
		}
	}
	requireClientVPPMemifUp(ctx, t, client)
	nseState, err := topology.Inspect(nse.Pod.Netns)
	require.NoError(t, err)
	nseIfname := onlyNonLoopback(t, "endpoint pod", nseState)
	requireKernelMatches(t, "endpoint pod", nseState, nseIfname, ipContext.GetDstIpAddrs(), endpointRoutes(ipContext), nil)

	rep.step("ping both ways")
	for _, dst := range ipContext.GetDstIpAddrs() {
		requireVPPPing(ctx, t, client, addrOf(t, dst))
	}
	for _, src := range ipContext.GetSrcIpAddrs() {
		requirePing(ctx, t, nse.Pod.Netns, nseIfname, src)
	}
	t.Logf("%s on %s: the client's own VPP and the kernel endpoint ping each other over memif", d.Forwarder().Name, d.VPPName())

	if restart {
		rep.step("restart")
		restartedAt := time.Now()
		for _, n := range d.Nodes {
			require.NoError(t, d.RestartForwarder(ctx, n), "the forwarder did not start again beside its VPP")
		}
		// A Close sent before the heal would find no connection in the new forwarder and be
		// refused onward; the client's connection file is rewritten once its VPP took the new
		// grant up.
		rep.step("heal: client granted again")
		var written time.Time
		waitUntil(t, restartedAt.Add(healTimeout), 250*time.Millisecond, func() bool {
			written, err = client.ConnectionsWritten()
			return err == nil && written.After(restartedAt)
		}, func() string {
			return fmt.Sprintf("the client with its own VPP was not granted its connection again within %s of the restart (last written %s, %v):\n%s",
				healTimeout, written.Format(time.RFC3339Nano), err, client.Proc.LogTail(20))
		})
		require.NoError(t, client.ReloadConnections())
		require.Len(t, client.Connections, 1)
		rep.recovered(written.Sub(restartedAt))
		t.Logf("the client with its own VPP was granted its connection again %s after the SIGKILL", written.Sub(restartedAt).Round(100*time.Millisecond))
		rep.step("healed: the client's VPP reaches the endpoint again")
		dst := addrOf(t, ipContext.GetDstIpAddrs()[0])
		var out string
		waitUntil(t, time.Now().Add(healTimeout), 500*time.Millisecond, func() bool {
			out, err = client.CLI(ctx, "ping "+dst+" repeat 3 interval 0.2")
			m := vppPingReceived.FindStringSubmatch(out)
			return err == nil && m != nil && m[2] == "3"
		}, func() string {
			return fmt.Sprintf("the client's VPP does not reach %s %s after the heal (error %v):\n%s\nclient:\n%s", dst, healTimeout, err, out, client.Proc.LogTail(20))
		})
		for _, src := range ipContext.GetSrcIpAddrs() {
			requirePing(ctx, t, nse.Pod.Netns, nseIfname, src)
		}
	}

	rep.step("close leaves nothing")
	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	var now []domain.VPPInterface
	waitFor(t, 200*time.Millisecond, func() bool {
		now, err = client.Interfaces(ctx)
		return err == nil && sameInterfaces(now, client.IdleInterfaces())
	}, func() string {
		return fmt.Sprintf("the client's VPP after Close: %v (error %v), before the connection %v", now, err, client.IdleInterfaces())
	})
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, n := range d.Nodes {
		requireVPPClean(ctx, t, d, n)
		requireNodeKernelClean(t, n)
	}
	if restart {
		// The memif socket is not an interface: sdk-vpp deletes it on Close, a release after a
		// restart must too.
		var memifNow string
		waitFor(t, 200*time.Millisecond, func() bool {
			memifNow, err = d.VPPShow(ctx, node, "show memif")
			return err == nil && memifNow == idleMemif
		}, func() string {
			return fmt.Sprintf("%s: show memif after Close (error %v):\n%s\nbefore the connection:\n%s", node.Name, err, memifNow, idleMemif)
		})
	}
	rep.step("endpoint unregisters")
	requireEndpointUnregisters(ctx, t, d, nse)
}

// requireClientVPPMemifUp requires the client's VPP to hold a memif interface that is connected
// to its peer, the forwarder's memif.
func requireClientVPPMemifUp(ctx context.Context, t *testing.T, client *domain.VPPClient) {
	t.Helper()
	var out string
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		out, err = client.CLI(ctx, "show memif")
		return err == nil && regexp.MustCompile(`flags[^\n]*connected`).MatchString(out)
	}, func() string {
		return fmt.Sprintf("the client's VPP has no connected memif (error %v):\n%s", err, out)
	})
}

// vppPingReceived reads how many replies VPP's ping command got.
var vppPingReceived = regexp.MustCompile(`(\d+) sent, (\d+) received`)

// requireVPPPing pings dst from the client's VPP: after a first round that may lose its first
// echo to address resolution, three echoes must all be answered.
func requireVPPPing(ctx context.Context, t *testing.T, client *domain.VPPClient, dst string) {
	t.Helper()
	_, _ = client.CLI(ctx, "ping "+dst+" repeat 1")
	out, err := client.CLI(ctx, "ping "+dst+" repeat 3 interval 0.2")
	require.NoError(t, err)
	m := vppPingReceived.FindStringSubmatch(out)
	require.NotNil(t, m, "ping %s from the client's VPP:\n%s", dst, out)
	received, _ := strconv.Atoi(m[2])
	require.Equal(t, 3, received, "ping %s from the client's VPP:\n%s", dst, out)
	t.Logf("from the client's VPP, ping %s: %s", dst, m[0])
}
