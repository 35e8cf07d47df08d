package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
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
	// folder and name are the example's folder under examples/: use-cases, features/ipv6, heal.
	folder, name, tag string
	// nodes is 1 for a local example, 2 when the manifests keep the pods apart.
	nodes                      int
	memifClient, memifEndpoint bool
	payload, cidr              string
	// inMakeTest puts the example in `make test`; the others need E2E_UPSTREAM_SLOW=1.
	inMakeTest bool
	// secondForwarder runs the example with examples/multiforwarder's set-up: a second
	// forwarder on the node (upstream's is forwarder-sriov, here one of the same kind); the one
	// the nsmgr chose must carry the connection whole, the other hold nothing. report names the
	// row then.
	secondForwarder bool
	report          string
}

func (e memifExample) service() string { return strings.ToLower(strings.ReplaceAll(e.name, "_", "-")) }

// upstreamMemifCIDR and upstreamMemifCIDR6 are every memif example's NSM_CIDR_PREFIX.
const (
	upstreamMemifCIDR  = "172.16.1.100/31"
	upstreamMemifCIDR6 = "2001:db8::/116"
)

var memifExamples = []memifExample{
	{folder: "use-cases", name: "Kernel2Memif", tag: "fk2m", nodes: 1, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR, inMakeTest: true},
	{folder: "use-cases", name: "Memif2Memif", tag: "fm2m", nodes: 1, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "Kernel2Ethernet2Memif", tag: "fke2m", nodes: 2, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "Memif2Ethernet2Memif", tag: "fme2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "Kernel2IP2Memif", tag: "fki2m", nodes: 2, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "Memif2IP2Kernel", tag: "fmi2k", nodes: 2, memifClient: true, payload: "IP", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "Memif2IP2Memif", tag: "fmi2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR},
	{folder: "use-cases", name: "multiforwarder-Memif2Memif", tag: "fmfm", nodes: 1, memifClient: true, memifEndpoint: true, payload: "ETHERNET",
		cidr: upstreamMemifCIDR, secondForwarder: true, report: "upstream multiforwarder + Memif2Memif"},
	{folder: "features/ipv6", name: "Memif2Memif_ipv6", tag: "f6m2m", nodes: 1, memifClient: true, memifEndpoint: true, payload: "ETHERNET", cidr: upstreamMemifCIDR6},
	{folder: "features/ipv6", name: "Kernel2IP2Memif_ipv6", tag: "f6ki2m", nodes: 2, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR6},
	{folder: "features/ipv6", name: "Memif2IP2Kernel_ipv6", tag: "f6mi2k", nodes: 2, memifClient: true, payload: "IP", cidr: upstreamMemifCIDR6},
	{folder: "features/ipv6", name: "Memif2IP2Memif_ipv6", tag: "f6mi2m", nodes: 2, memifClient: true, memifEndpoint: true, payload: "IP", cidr: upstreamMemifCIDR6},
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

// memifRun is one running example.
type memifRun struct {
	example memifExample
	sc      scenario
	d       *domain.Domain
	rep     *report
	// nse is the endpoint's program and pod; nseEnd and clientEnd the connection's two ends.
	nse               *domain.Endpoint
	nseEnd, clientEnd memifEnd
	closeClient       func() error
	conn              *networkservice.Connection
	// forwarders are every forwarder of the domain: the nodes' and a second one's.
	forwarders []*domain.Node
	// nseCIDR is the current endpoint's range once a heal step replaced the first; empty before.
	nseCIDR string
}

func runMemifExample(t *testing.T, example memifExample, realVPP string) {
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	r := startMemifExample(ctx, t, example, realVPP)
	clientAddr, nseAddr := upstreamMemifAddrs(example.cidr)
	r.requireConnected(ctx, t, clientAddr, nseAddr)
	r.requirePings(ctx, t, clientAddr, nseAddr)
	r.requireCloseLeavesNothing(ctx, t)
}

// startMemifExample starts example's domain, its endpoint and its client, and requires the
// client granted the README's addresses.
func startMemifExample(ctx context.Context, t *testing.T, example memifExample, realVPP string) *memifRun {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	r := &memifRun{example: example, sc: withReport(upstreamScenario(example.tag, example.nodes, realVPP), upstreamMemifReport(example))}
	r.d = startDomain(ctx, t, r.sc)
	r.rep = reportOf(t)
	r.forwarders = r.d.Nodes
	if example.secondForwarder {
		node := r.d.Nodes[0]
		second, err := r.d.AddForwarder(ctx, node, "my-forwarder-vpp-"+node.Name, map[string]string{"p2p": "true"})
		require.NoError(t, err)
		r.forwarders = []*domain.Node{node, second}
	}
	r.startEndpoint(ctx, t, "", example.cidr)

	r.rep.step("connect")
	serviceName := example.service()
	clientNode := r.d.Nodes[r.sc.clientNode]
	var conn *networkservice.Connection
	if example.memifClient {
		client, err := r.d.ConnectVPPClient(ctx, clientNode, "nsc-memif", fmt.Sprintf("memif://%s/memif0", serviceName))
		require.NoError(t, err, "the client with its own VPP was not granted its connection")
		require.Len(t, client.Connections, 1)
		conn, r.closeClient = client.Connections[0], client.Close
		r.clientEnd = memifEnd{name: "nsc-memif", pod: client.Pod, vpp: client}
	} else {
		client, err := r.d.Connect(ctx, clientNode, "alpine", "kernel://"+serviceName+"/"+clientIfname)
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)
		conn, r.closeClient = client.Connections[0], client.Close
		r.clientEnd = memifEnd{name: "alpine", pod: client.Pod}
	}
	r.conn = conn
	ipc := conn.GetContext().GetIpContext()
	wantClient, wantNSE := upstreamMemifAddrs(example.cidr)
	require.Equal(t, []string{wantClient + "/" + hostBits(wantClient)}, normalizePrefixes(t, ipc.GetSrcIpAddrs()), "the client's addresses")
	require.Equal(t, []string{wantNSE + "/" + hostBits(wantNSE)}, normalizePrefixes(t, ipc.GetDstIpAddrs()), "the endpoint's addresses")
	return r
}

// startEndpoint starts the example's endpoint (its name with suffix, a new pod) on the
// endpoint's node, handing out addresses from cidr.
func (r *memifRun) startEndpoint(ctx context.Context, t *testing.T, suffix, cidr string) {
	t.Helper()
	node := r.d.Nodes[r.sc.endpointNode]
	payload := domain.WithPayload(r.example.payload)
	if r.example.memifEndpoint {
		vppNSE, err := r.d.StartVPPEndpoint(ctx, node, "nse-memif"+suffix, r.example.service(), cidr, payload)
		require.NoError(t, err)
		r.nse, r.nseEnd = vppNSE.Endpoint, memifEnd{name: vppNSE.Name, vpp: vppNSE}
	} else {
		nse, err := r.d.StartEndpoint(ctx, node, "nse-kernel"+suffix, r.example.service(), cidr, payload)
		require.NoError(t, err)
		r.nse, r.nseEnd = nse, memifEnd{name: nse.Name}
	}
	r.nseEnd.pod = r.nse.Pod
	r.nseEnd.idleMemif = idleMemifOf(ctx, t, r.nseEnd)
}

// requireConnected requires the tunnel between the nodes, and each end to hold its side:
// a memif connected to its peer with the address on it, or a kernel interface with the
// addresses and routes of the connection.
func (r *memifRun) requireConnected(ctx context.Context, t *testing.T, clientAddr, nseAddr string) {
	t.Helper()
	r.rep.step("connected: each end holds its side")
	if r.example.secondForwarder {
		r.requireOneForwarderCarries(ctx, t)
	}
	if r.example.nodes == 2 {
		tunnel := "vxlan"
		if r.example.payload == "IP" {
			tunnel = "wireguard"
		}
		for _, node := range r.d.Nodes {
			requireVPPHolds(ctx, t, r.d, node, tunnel)
		}
	}
	for _, end := range []struct {
		memifEnd
		addr string
		peer string
	}{{r.clientEnd, clientAddr, nseAddr}, {r.nseEnd, nseAddr, clientAddr}} {
		if end.vpp != nil {
			requirePodVPPMemifHolds(ctx, t, end.memifEnd, end.addr)
			continue
		}
		// The kernel end: its one interface holds exactly its address, and a route to the peer.
		var state *topology.State
		var err error
		waitFor(t, 100*time.Millisecond, func() bool {
			state, err = topology.Inspect(end.pod.Netns)
			if err != nil || len(state.Links) != 2 {
				return false
			}
			ifname := onlyNonLoopback(t, end.name+" pod", state)
			link, _ := state.Link(ifname)
			return link.Up && slices.Equal(uniquePrefixes(t, link.Addrs), []string{end.addr + "/" + hostBits(end.addr)})
		}, func() string {
			return fmt.Sprintf("%s pod does not hold %s on its connection's interface (%v)\n%s", end.name, end.addr, err, state)
		})
		requireRouteTo(t, end.name+" pod", state, end.peer)
	}
}

// requireOneForwarderCarries requires exactly one of the node's two forwarders on the
// connection's path, and the other's journal to hold nothing.
func (r *memifRun) requireOneForwarderCarries(ctx context.Context, t *testing.T) {
	t.Helper()
	var carriers []string
	for _, f := range r.forwarders {
		if forwarderOnPath(r.conn, f.ForwarderName) {
			carriers = append(carriers, f.ForwarderName)
		} else {
			requireVPPClean(ctx, t, r.d, f)
			if ourDesign(r.d) {
				requireJournalEmpty(ctx, t, r.d, f)
			}
		}
	}
	require.Len(t, carriers, 1, "forwarders on the client's path %v", pathNames(r.conn))
	t.Logf("%s carries the connection (path %v)", carriers[0], pathNames(r.conn))
}

// requirePings does the README's pings: from the client to the endpoint's address, and from
// the endpoint to the client's.
func (r *memifRun) requirePings(ctx context.Context, t *testing.T, clientAddr, nseAddr string) {
	t.Helper()
	r.rep.step("pings: the client to the endpoint, the endpoint to the client")
	for _, ping := range []struct {
		from     memifEnd
		src, dst string
	}{{r.clientEnd, clientAddr, nseAddr}, {r.nseEnd, nseAddr, clientAddr}} {
		if ping.from.vpp != nil {
			requirePodVPPPing(ctx, t, ping.from, ping.dst)
		} else {
			requireUpstreamPing(ctx, t, ping.from.pod.Netns, ping.src, ping.dst)
		}
	}
	t.Logf("%s on %s: %s and %s ping each other", r.d.Forwarder().Name, r.d.VPPName(), r.clientEnd.name, r.nseEnd.name)
}

// requireCloseLeavesNothing closes the client and requires both pods, both pods' VPPs, every
// node, every node's VPP and every journal as before the connection; then the endpoint is
// deleted and must be gone from the registry.
func (r *memifRun) requireCloseLeavesNothing(ctx context.Context, t *testing.T) {
	t.Helper()
	r.rep.step("close leaves nothing")
	require.NoError(t, r.closeClient(), "the client's Close failed")
	for _, end := range []memifEnd{r.clientEnd, r.nseEnd} {
		requireEventuallyEmpty(t, end.name+" pod", end.pod.Netns)
		if end.vpp != nil {
			requirePodVPPIdle(ctx, t, end)
		}
	}
	for _, node := range r.d.Nodes {
		requireNodeKernelClean(t, node)
	}
	for _, forwarder := range r.forwarders {
		requireVPPClean(ctx, t, r.d, forwarder)
		if ourDesign(r.d) {
			requireJournalEmpty(ctx, t, r.d, forwarder)
		}
	}
	r.rep.step("endpoint unregisters")
	require.NoError(t, r.deleteEndpoint())
	requireEventuallyUnregistered(ctx, t, r.d, r.nse.Name)
}

// deleteEndpoint deletes the endpoint's pod: its program (which unregisters), its VPP if it has
// one, and its namespace.
func (r *memifRun) deleteEndpoint() error {
	if vppNSE, ok := r.nseEnd.vpp.(*domain.VPPEndpoint); ok {
		return vppNSE.Close()
	}
	return r.nse.Close()
}

// upstreamMemifReport is the row `make compare` records example's runs under.
func upstreamMemifReport(example memifExample) string {
	if example.report != "" {
		return example.report
	}
	return "upstream " + example.folder + "/" + example.name
}

// upstreamMemifAddrs are the addresses the READMEs ping: the endpoint takes the first of its
// range, the client the second.
func upstreamMemifAddrs(cidr string) (client, nse string) {
	first := netip.MustParsePrefix(cidr).Addr()
	return first.Next().String(), first.String()
}

// hostBits is the prefix length of a host address of addr's family.
func hostBits(addr string) string {
	if strings.Contains(addr, ":") {
		return "128"
	}
	return "32"
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

// requirePodVPPPing is the README's `vppctl ping <dst> repeat 4` from end's VPP, once a single
// echo has been answered (the first ones may be lost to address resolution, IPv6's neighbor
// discovery taking longer than ARP): all four must be answered (upstream requires one).
func requirePodVPPPing(ctx context.Context, t *testing.T, end memifEnd, dst string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		warm, _ := end.vpp.CLI(ctx, "ping "+dst+" repeat 1")
		if m := vppPingReceived.FindStringSubmatch(warm); m != nil && m[2] == "1" {
			break
		}
	}
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

// requireRouteTo requires the pod's main table to hold a route to peer's host address.
func requireRouteTo(t *testing.T, where string, state *topology.State, peer string) {
	t.Helper()
	want := peer + "/" + hostBits(peer)
	for _, r := range state.Routes {
		if r.Table == 254 && r.Dst == want {
			return
		}
	}
	t.Fatalf("%s: no route to %s\n%s", where, want, state)
}
