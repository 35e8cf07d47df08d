package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The memif examples of deployments-k8s v1.18.0's use-cases and features/ipv6 (issue 24,
// docs/upstream-examples.md): a client and an endpoint, each either a kernel pod or a pod with a
// VPP of its own on the memif mechanism (nsc-memif: e2e-nsc-vpp; nse-memif: e2e-nse-vpp), on one
// node or on two (vxlan for an Ethernet service, wireguard for an IP one: difference 6). Each
// does the README's pings, from the client to the endpoint's address and back (`ping` in a
// kernel pod, `vppctl ping` in a VPP pod), and ends with the harness's baseline check: nothing
// left in either pod, either pod's VPP, any node or any forwarder's VPP after Close. Real VPP
// only: the simulator's memif never connects to a peer.

// memifExample is one example: where its client and endpoint run, what they are and what the
// service carries.
type memifExample struct {
	// name is the example's folder, under use-cases/ or features/ipv6/.
	name, tag string
	// nodes is 1 for a local example, 2 when the manifests keep the pods apart.
	nodes                      int
	memifClient, memifEndpoint bool
	payload, cidr              string
	// inMakeTest puts the example in `make test`; the others need E2E_UPSTREAM_SLOW=1.
	inMakeTest bool
}

func (e memifExample) service() string { return strings.ToLower(strings.ReplaceAll(e.name, "_", "-")) }

// upstreamMemifCIDR and upstreamMemifCIDR6 are every memif example's NSM_CIDR_PREFIX.
const (
	upstreamMemifCIDR  = "172.16.1.100/31"
	upstreamMemifCIDR6 = "2001:db8::/116"
)

var memifExamples = []memifExample{
	{name: "Kernel2Memif", tag: "fk2m", nodes: 1, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR, inMakeTest: true},
	{name: "Memif2Memif", tag: "fm2m", nodes: 1, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{name: "Kernel2Ethernet2Memif", tag: "fke2m", nodes: 2, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{name: "Memif2Ethernet2Memif", tag: "fme2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{name: "Kernel2IP2Memif", tag: "fki2m", nodes: 2, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR},
	{name: "Memif2IP2Kernel", tag: "fmi2k", nodes: 2, memifClient: true, payload: "IP", cidr: upstreamMemifCIDR},
	{name: "Memif2IP2Memif", tag: "fmi2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR},
	{name: "Memif2Memif_ipv6", tag: "f6m2m", nodes: 1, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR6},
	{name: "Kernel2IP2Memif_ipv6", tag: "f6ki2m", nodes: 2, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR6},
	{name: "Memif2IP2Kernel_ipv6", tag: "f6mi2k", nodes: 2, memifClient: true, payload: "IP", cidr: upstreamMemifCIDR6},
	{name: "Memif2IP2Memif_ipv6", tag: "f6mi2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR6},
}

// TestUpstreamMemifExamples runs every memif example as a subtest named after it, each on the
// simulator (skipped) and on real VPP.
func TestUpstreamMemifExamples(t *testing.T) {
	for _, example := range memifExamples {
		t.Run(example.name, func(t *testing.T) {
			if !example.inMakeTest {
				skipUnlessFeaturesSlow(t)
			}
			onEachVPP(t, func(t *testing.T, realVPP string) {
				if realVPP == "" {
					t.Skip(noMemifOnSimulator)
				}
				runMemifExample(t, example, realVPP)
			})
		})
	}
}

// podVPP is a pod's own VPP, a memif client's or endpoint's.
type podVPP interface {
	CLI(ctx context.Context, command string) (string, error)
	Interfaces(ctx context.Context) ([]domain.VPPInterface, error)
	IdleInterfaces() []domain.VPPInterface
}

// memifEnd is one end of an example's connection: its pod, and its VPP when it has one.
type memifEnd struct {
	name string
	pod  *topology.Pod
	vpp  podVPP
	// idleMemif is `show memif` of the pod's VPP before the connection: its sockets included.
	idleMemif string
}

func runMemifExample(t *testing.T, example memifExample, realVPP string) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := withReport(upstreamScenario(example.tag, example.nodes, realVPP), upstreamMemifReport(example))
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	rep := reportOf(t)
	clientNode, nseNode := d.Nodes[sc.clientNode], d.Nodes[sc.endpointNode]
	serviceName := example.service()

	var nse *domain.Endpoint
	nseEnd := memifEnd{name: "nse-kernel"}
	if example.memifEndpoint {
		vppNSE, err := d.StartVPPEndpoint(ctx, nseNode, "nse-memif", serviceName, example.cidr, domain.WithPayload(example.payload))
		require.NoError(t, err)
		nse, nseEnd = vppNSE.Endpoint, memifEnd{name: "nse-memif", vpp: vppNSE}
	} else {
		var err error
		nse, err = d.StartEndpoint(ctx, nseNode, "nse-kernel", serviceName, example.cidr, domain.WithPayload(example.payload))
		require.NoError(t, err)
	}
	nseEnd.pod = nse.Pod
	nseEnd.idleMemif = idleMemifOf(ctx, t, nseEnd)

	rep.step("connect")
	var conn *networkservice.Connection
	var closeClient func() error
	clientEnd := memifEnd{name: "alpine"}
	if example.memifClient {
		client, err := d.ConnectVPPClient(ctx, clientNode, "nsc-memif", fmt.Sprintf("memif://%s/memif0", serviceName))
		require.NoError(t, err, "the client with its own VPP was not granted its connection")
		require.Len(t, client.Connections, 1)
		conn, closeClient = client.Connections[0], client.Close
		clientEnd = memifEnd{name: "nsc-memif", pod: client.Pod, vpp: client}
	} else {
		client, err := d.Connect(ctx, clientNode, "alpine", "kernel://"+serviceName+"/"+clientIfname)
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)
		conn, closeClient = client.Connections[0], client.Close
		clientEnd.pod = client.Pod
	}
	ipc := conn.GetContext().GetIpContext()
	require.Len(t, ipc.GetSrcIpAddrs(), 1, "the client's addresses")
	require.Len(t, ipc.GetDstIpAddrs(), 1, "the endpoint's addresses")
	clientAddr, nseAddr := addrOf(t, ipc.GetSrcIpAddrs()[0]), addrOf(t, ipc.GetDstIpAddrs()[0])
	wantClient, wantNSE := upstreamMemifAddrs(example.cidr)
	require.Equal(t, [2]string{wantClient, wantNSE}, [2]string{clientAddr, nseAddr}, "the client's and the endpoint's addresses")

	rep.step("connected: each end holds its side")
	if example.nodes == 2 {
		tunnel := "vxlan"
		if example.payload == "IP" {
			tunnel = "wireguard"
		}
		for _, node := range d.Nodes {
			requireVPPHolds(ctx, t, d, node, tunnel)
		}
	}
	for _, end := range []struct {
		memifEnd
		addrs  []string
		routes []route
	}{
		{clientEnd, ipc.GetSrcIpAddrs(), clientRoutes(ipc)},
		{nseEnd, ipc.GetDstIpAddrs(), endpointRoutes(ipc)},
	} {
		if end.vpp != nil {
			requirePodVPPMemifHolds(ctx, t, end.memifEnd, addrOf(t, end.addrs[0]))
			continue
		}
		state, err := topology.Inspect(end.pod.Netns)
		require.NoError(t, err)
		requireKernelMatches(t, end.name+" pod", state, onlyNonLoopback(t, end.name+" pod", state), end.addrs, end.routes, nil)
	}

	rep.step("pings: the client to the endpoint, the endpoint to the client")
	for _, ping := range []struct {
		from     memifEnd
		src, dst string
	}{{clientEnd, clientAddr, nseAddr}, {nseEnd, nseAddr, clientAddr}} {
		if ping.from.vpp != nil {
			requirePodVPPPing(ctx, t, ping.from, ping.dst)
		} else {
			requireUpstreamPing(ctx, t, ping.from.pod.Netns, ping.src, ping.dst)
		}
	}
	t.Logf("%s on %s: %s and %s ping each other", d.Forwarder().Name, d.VPPName(), clientEnd.name, nseEnd.name)

	rep.step("close leaves nothing")
	require.NoError(t, closeClient(), "the client's Close failed")
	for _, end := range []memifEnd{clientEnd, nseEnd} {
		requireEventuallyEmpty(t, end.name+" pod", end.pod.Netns)
		if end.vpp != nil {
			requirePodVPPIdle(ctx, t, end)
		}
	}
	for _, node := range d.Nodes {
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, node)
		}
	}
	rep.step("endpoint unregisters")
	if nseEnd.vpp != nil {
		require.NoError(t, nseEnd.vpp.(*domain.VPPEndpoint).Close())
	} else {
		require.NoError(t, nse.Close())
	}
	requireEventuallyUnregistered(ctx, t, d, nse.Name)
}

// upstreamMemifReport is the row `make compare` records example's runs under.
func upstreamMemifReport(example memifExample) string {
	if strings.HasSuffix(example.name, "_ipv6") {
		return "upstream features/ipv6/" + example.name
	}
	return "upstream use-cases/" + example.name
}

// upstreamMemifAddrs are the addresses the READMEs ping: the endpoint takes the first of its
// range, the client the second.
func upstreamMemifAddrs(cidr string) (client, nse string) {
	if cidr == upstreamMemifCIDR6 {
		return "2001:db8::1", "2001:db8::"
	}
	return "172.16.1.101", "172.16.1.100"
}

// idleMemifOf is `show memif` of end's VPP, or "" for a kernel pod.
func idleMemifOf(ctx context.Context, t *testing.T, end memifEnd) string {
	t.Helper()
	if end.vpp == nil {
		return ""
	}
	out, err := end.vpp.CLI(ctx, "show memif")
	require.NoError(t, err)
	return out
}

// requirePodVPPMemifHolds requires end's VPP to hold a memif connected to its peer, the
// forwarder's (or, for a local memif to memif connection, the other pod's), with addr on it.
func requirePodVPPMemifHolds(ctx context.Context, t *testing.T, end memifEnd, addr string) {
	t.Helper()
	var memifs, addrs string
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		if memifs, err = end.vpp.CLI(ctx, "show memif"); err != nil {
			return false
		}
		if addrs, err = end.vpp.CLI(ctx, "show interface address"); err != nil {
			return false
		}
		return strings.Contains(memifs, "connected") && strings.Contains(addrs, addr+"/")
	}, func() string {
		return fmt.Sprintf("%s's VPP has no connected memif holding %s (error %v):\n%s\n%s", end.name, addr, err, memifs, addrs)
	})
}

// requirePodVPPPing is the README's `vppctl ping <dst> repeat 4` from end's VPP, after one echo
// that may be lost to address resolution: all four must be answered (upstream requires one).
func requirePodVPPPing(ctx context.Context, t *testing.T, end memifEnd, dst string) {
	t.Helper()
	_, _ = end.vpp.CLI(ctx, "ping "+dst+" repeat 1")
	out, err := end.vpp.CLI(ctx, "ping "+dst+" repeat 4 interval 0.2")
	require.NoError(t, err)
	m := vppPingReceived.FindStringSubmatch(out)
	require.NotNil(t, m, "ping %s from %s's VPP:\n%s", dst, end.name, out)
	received, _ := strconv.Atoi(m[2])
	require.Equal(t, 4, received, "ping %s from %s's VPP:\n%s", dst, end.name, out)
	t.Logf("from %s's VPP, ping %s: %s", end.name, dst, m[0])
}

// requirePodVPPIdle waits until end's VPP holds exactly the interfaces and memif sockets it had
// before the connection.
func requirePodVPPIdle(ctx context.Context, t *testing.T, end memifEnd) {
	t.Helper()
	var now []domain.VPPInterface
	var memifs string
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		if now, err = end.vpp.Interfaces(ctx); err != nil || !sameInterfaces(now, end.vpp.IdleInterfaces()) {
			return false
		}
		memifs, err = end.vpp.CLI(ctx, "show memif")
		return err == nil && (end.idleMemif == "" || memifs == end.idleMemif)
	}, func() string {
		return fmt.Sprintf("%s's VPP after Close: %v (error %v), before the connection %v; show memif:\n%s\nbefore:\n%s",
			end.name, now, err, end.vpp.IdleInterfaces(), memifs, end.idleMemif)
	})
}
