package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// The vl3 examples of NSM's deployments-k8s v1.18.0 (issue 24, docs/upstream-examples.md):
// use-cases/vl3-basic, heal/vl3-nse-death, heal/vl3-nscs-death, features/vl3-ipv6,
// features/dual-stack/vl3-dual-stack, features/vl3-dns and heal/vl3-dataplane-interrupt. One
// vl3 network: a vl3 IPAM server
// per IP family handing out /24s of 172.16.0.0/16 or /112s of 2001:db8::/64, two vl3 endpoints
// (the second peers with the first through both nodes' forwarders), two kernel clients of the
// vl3 service, one on each node. Every client pings every client and both endpoints' addresses,
// in each family; then the example's deaths; then the pings again; and the run ends with Close
// leaving nothing. In vl3-dns, four clients ping each other and the endpoints by name instead,
// and look the addresses up again (PTR).
//
// The endpoint is e2e-nse-vl3. On real VPP, in the examples marked ownVPP, it runs as upstream's
// cmd-nse-vl3-vpp: a VPP of its own in its pod, its clients' connections and its peerings memifs
// into that VPP, and a kernel connection to itself into its pod (vl3_self_test.go). On the
// simulator, which has no VPP for pods, its data plane is its pod's kernel and the
// endpoints' connections are kernel ones. The service's payload is IP as upstream's on
// real VPP (wireguard between the nodes), Ethernet on the simulator, which carries nothing over
// wireguard (VXLAN between the nodes). Placement is fixed: IPAM and the first endpoint and
// client on node 1, the second endpoint and client on node 2. Pod deletion is SIGTERM.

// vl3Example is one of the vl3 examples.
type vl3Example struct {
	// name is the example's folder (use-cases/ or heal/), and the subtest's name.
	name string
	// tag names the run's namespaces (h-up's prefix for vl3: uv).
	tag string
	// service is the vl3 network's service, as the example's.
	service string
	// families are the network's IP families, one vl3 IPAM server each.
	families []vl3Family
	// endpointsPing has each endpoint ping both endpoints' addresses too (vl3-dual-stack).
	endpointsPing bool
	// clients is how many clients, placed on the nodes in turn; 2 when 0.
	clients int
	// byName pings by DNS name (vl3-dns) instead of by address.
	byName bool
	// step is the example's death, nil for vl3-basic.
	step *vl3Step
	// fast runs in `make test`; the others run with E2E_UPSTREAM_SLOW=1 (make upstream-slow),
	// and the features rows also in `make compare`.
	fast, feature bool
	// compare runs a heal row in `make compare` too, as the features rows.
	compare bool
	// ownVPP runs the endpoints with a VPP of their own on real VPP, as upstream's.
	ownVPP bool
	// realVPPOnly skips the simulator, which runs no VPP in pods (the step needs the endpoints').
	realVPPOnly bool
	// within bounds the run; shortScenarioTime when 0.
	within time.Duration
}

// vl3Family is one IP family of a vl3 network: its IPAM server's network and prefix length,
// and the addresses the example's README expects the two endpoints to hold.
type vl3Family struct {
	ipam, network, prefixSize string
	endpointAddrs             [2]string
}

var (
	vl3IPv4 = vl3Family{"vl3-ipam-ipv4", "172.16.0.0/16", "24", [2]string{"172.16.0.0", "172.16.1.0"}}
	vl3IPv6 = vl3Family{"vl3-ipam-ipv6", "2001:db8::/64", "112", [2]string{"2001:db8::", "2001:db8::1:0"}}
)

type vl3Step struct {
	what string
	do   func(ctx context.Context, t *testing.T, r *vl3Run)
}

// vl3Run is one running vl3 network.
type vl3Run struct {
	d         *domain.Domain
	service   string
	ipams     []*domain.Vl3IPAM
	endpoints []*domain.Endpoint
	// ownVPPs are the endpoints' own VPPs by endpoint name, when they have one.
	ownVPPs map[string]*domain.VPPEndpoint
	// selfAddrs are the addresses of each own-VPP endpoint's connection to itself, by name.
	selfAddrs map[string][]string
	clients   []*domain.Client
	// gone are the pods whose programs were stopped by a step: they must be empty at the end.
	gone []*domain.Client
}

var vl3Examples = []vl3Example{
	{name: "vl3-basic", tag: "uvb", service: "vl3", families: []vl3Family{vl3IPv4}, fast: true, ownVPP: true},
	{name: "vl3-nse-death", tag: "uvnse", service: "vl3", families: []vl3Family{vl3IPv4}, ownVPP: true,
		step: &vl3Step{"the second vl3 endpoint's pod deleted, a new one ready", replaceSecondVl3Endpoint}},
	{name: "vl3-nscs-death", tag: "uvnsc", service: "vl3", families: []vl3Family{vl3IPv4}, ownVPP: true,
		step: &vl3Step{"both clients' pods deleted, two new clients ready", replaceVl3Clients}},
	{name: "vl3-ipv6", tag: "uv6", service: "vl3-ipv6", families: []vl3Family{vl3IPv6}, feature: true, ownVPP: true},
	{name: "vl3-dual-stack", tag: "uvds", service: "vl3-dual-stack", families: []vl3Family{vl3IPv4, vl3IPv6},
		endpointsPing: true, fast: true, ownVPP: true},
	{name: "vl3-dns", tag: "uvdns", service: "vl3-dns", families: []vl3Family{vl3IPv4}, clients: 4, byName: true,
		feature: true, ownVPP: true},
	{name: "vl3-dataplane-interrupt", tag: "uvdpi", service: "vl3", families: []vl3Family{vl3IPv4}, ownVPP: true,
		realVPPOnly: true, compare: true, step: &vl3Step{"all memifs of each endpoint's VPP set down in turn, the network heals",
			interruptVl3Dataplanes}},
}

// TestUpstreamVl3 runs every vl3 example as a subtest named after it, on the simulator and on
// real VPP.
func TestUpstreamVl3(t *testing.T) {
	for _, ex := range vl3Examples {
		t.Run(ex.name, func(t *testing.T) {
			if !ex.fast && (ex.feature || ex.compare) {
				skipUnlessFeaturesSlow(t)
			} else if !ex.fast && os.Getenv("E2E_UPSTREAM_SLOW") == "" {
				t.Skip("issue 24: beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
			}
			onEachVPP(t, func(t *testing.T, realVPP string) {
				runVl3Example(t, ex, realVPP)
			})
		})
	}
}

func runVl3Example(t *testing.T, ex vl3Example, realVPP string) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if ex.realVPPOnly && realVPP == "" {
		t.Skip("issue 24: the simulator runs no VPP in pods; this example sets the endpoints' memifs down in theirs")
	}
	sc := upstreamScenario(ex.tag, 2, realVPP)
	sc.report = "vl3/" + ex.name
	payload := "ETHERNET"
	if realVPP != "" {
		sc.overVxlan, payload = false, "IP"
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(ex.within, shortScenarioTime))
	defer cancel()
	r := &vl3Run{d: startDomain(ctx, t, sc), service: ex.service}
	if ex.ownVPP && realVPP != "" {
		r.ownVPPs = map[string]*domain.VPPEndpoint{}
	}
	rep := reportOf(t)
	rep.step("vl3 network up: IPAM, two endpoints peered, two clients")
	for _, family := range ex.families {
		ipam, err := r.d.StartVl3IPAM(ctx, r.d.Nodes[0], family.ipam, family.network, family.prefixSize)
		require.NoError(t, err)
		r.ipams = append(r.ipams, ipam)
	}
	r.startEndpoint(ctx, t, 0, "nse-vl3-1", payload)
	r.startEndpoint(ctx, t, 1, "nse-vl3-2", payload)
	clients := max(ex.clients, 2)
	for i := range clients {
		r.connectClient(ctx, t, i%2, fmt.Sprintf("nsc-vl3-%d", i+1))
	}
	requireVl3Tunnel(ctx, t, r.d, realVPP)
	// As the examples' READMEs expect: each IPAM's first two prefixes, an endpoint address of
	// each family per endpoint.
	for i, e := range r.endpoints {
		var want []string
		for _, family := range ex.families {
			want = append(want, family.endpointAddrs[i])
		}
		require.Equal(t, want, vl3EndpointAddrs(t, e), "%s's vl3 addresses", e.Name)
	}
	if r.ownVPPs != nil {
		r.requireEndpointsConnectedToThemselves(t)
	}
	if ex.byName {
		rep.step("every client pings every client and both endpoints by name, and looks their addresses up")
		r.requireNamePings(ctx, t)
		rep.step("close leaves nothing")
		r.requireCloseLeavesNothing(ctx, t)
		return
	}
	rep.step("every client pings every client and both endpoints")
	r.requirePings(ctx, t, true)
	if ex.endpointsPing {
		rep.step("every endpoint pings both endpoints")
		r.requireEndpointPings(ctx, t)
	}

	if ex.step != nil {
		rep.step(ex.step.what)
		t.Logf("step: %s", ex.step.what)
		since := time.Now()
		ex.step.do(ctx, t, r)
		rep.recovered(time.Since(since))
		rep.step("after the step: every client pings every client")
		r.requirePings(ctx, t, false)
	}
	rep.step("close leaves nothing")
	r.requireCloseLeavesNothing(ctx, t)
}

func (r *vl3Run) startEndpoint(ctx context.Context, t *testing.T, node int, name, payload string) {
	t.Helper()
	if r.ownVPPs == nil {
		nse, err := r.d.StartVl3Endpoint(ctx, r.d.Nodes[node], name, r.service, r.ipams, domain.WithPayload(payload))
		require.NoError(t, err)
		r.endpoints = append(r.endpoints, nse)
		return
	}
	nse, err := r.d.StartVl3VPPEndpoint(ctx, r.d.Nodes[node], name, r.service, r.ipams, domain.WithPayload(payload))
	require.NoError(t, err)
	r.endpoints = append(r.endpoints, nse.Endpoint)
	r.ownVPPs[name] = nse
}

// closeEndpoint deletes the endpoint's pod: with a VPP of its own, the VPP goes with it.
func (r *vl3Run) closeEndpoint(e *domain.Endpoint) error {
	if vpp, ok := r.ownVPPs[e.Name]; ok {
		return vpp.Close()
	}
	return e.Close()
}

// connectClient connects a client of the service with its podName label, which names it in the
// endpoints' DNS (upstream's cmd-nsc takes it from its pod).
func (r *vl3Run) connectClient(ctx context.Context, t *testing.T, node int, name string) {
	t.Helper()
	client, err := r.d.Connect(ctx, r.d.Nodes[node], name,
		fmt.Sprintf("kernel://%s/%s?podName=%s", r.service, clientIfname, name))
	require.NoError(t, err)
	require.Len(t, client.Connections, 1)
	r.clients = append(r.clients, client)
}

// requireVl3Tunnel requires both nodes' VPPs to hold the tunnel the endpoints' peering and the
// remote clients cross: wireguard for the IP payload, VXLAN on the simulator.
func requireVl3Tunnel(ctx context.Context, t *testing.T, d *domain.Domain, realVPP string) {
	t.Helper()
	kind := "vxlan"
	if realVPP != "" {
		kind = "wireguard"
	}
	for _, node := range d.Nodes {
		requireVPPHolds(ctx, t, d, node, kind)
	}
}

// requirePings has every client ping every client's vl3 addresses (its own included, as the
// examples' loops do) and, with endpoints, both endpoints' addresses, in each family:
// `ping -c2 -i 0.5`.
func (r *vl3Run) requirePings(ctx context.Context, t *testing.T, endpoints bool) {
	t.Helper()
	var targets []string
	for _, c := range r.clients {
		targets = append(targets, vl3ClientAddrs(t, c, len(r.ipams))...)
	}
	if endpoints {
		targets = append(targets, r.endpointAddrs(t)...)
	}
	for _, pinger := range r.clients {
		requirePingsFrom(ctx, t, pinger.Name, pinger.Pod.Netns, targets)
	}
}

// requireEndpointPings has every endpoint ping both endpoints' addresses in each family, as
// vl3-dual-stack's README does after the clients' pings.
func (r *vl3Run) requireEndpointPings(ctx context.Context, t *testing.T) {
	t.Helper()
	targets := r.endpointAddrs(t)
	for _, pinger := range r.endpoints {
		requirePingsFrom(ctx, t, pinger.Name, pinger.Pod.Netns, targets)
	}
}

func (r *vl3Run) endpointAddrs(t *testing.T) []string {
	var addrs []string
	for _, e := range r.endpoints {
		addrs = append(addrs, vl3EndpointAddrs(t, e)...)
	}
	return addrs
}

func requirePingsFrom(ctx context.Context, t *testing.T, pinger, netns string, targets []string) {
	t.Helper()
	for _, target := range targets {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netns,
			"ping", "-c", "2", "-i", "0.5", "-W", "2", target).CombinedOutput()
		require.NoError(t, err, "%s pings %s:\n%s", pinger, target, out)
	}
}

// vl3ClientAddrs are the client's vl3 addresses: the source addresses of its connection, one
// per family of the network.
func vl3ClientAddrs(t *testing.T, c *domain.Client, families int) []string {
	t.Helper()
	srcs := c.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs()
	require.Len(t, srcs, families, "%s: one vl3 address per family, got %v", c.Name, srcs)
	var addrs []string
	for _, src := range srcs {
		addrs = append(addrs, netip.MustParsePrefix(src).Addr().String())
	}
	return addrs
}

// vl3PrefixLine is what e2e-nse-vl3 logs on its prefix from each IPAM server, in the order of
// its NSM_PREFIX_SERVER_URL.
var vl3PrefixLine = regexp.MustCompile(`vl3 prefix ([0-9a-f.:]+)/[0-9]+ from`)

// vl3EndpointAddrs are the endpoint's vl3 addresses: each prefix's first, as the vl3 IPAM has
// it, in the order of the IPAM servers.
func vl3EndpointAddrs(t *testing.T, e *domain.Endpoint) []string {
	t.Helper()
	data, err := os.ReadFile(e.Proc.LogPath())
	require.NoError(t, err)
	found := vl3PrefixLine.FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, found, "%s logged no vl3 prefix", e.Name)
	var addrs []string
	for _, m := range found {
		addrs = append(addrs, m[1])
	}
	return addrs
}

// replaceSecondVl3Endpoint deletes the pod of the endpoint that peered with the first (SIGTERM:
// it closes its peering and unregisters; then its namespace goes, and with it the interfaces
// its clients' liveness checks ping), starts a new one on its node under a new name, which
// peers with the first, and waits until every client of the old one has healed onto one of the
// two. The old path's release in the forwarders is checked at the end (VPP and nodes clean).
//
// The namespace outlives the pod (sdk's recvfd in the forwarder and the nsmgr holds its
// descriptor for each connection until Close), and its addresses would answer the clients'
// liveness pings, so that their heals asked for the dead endpoint by name forever (upstream's
// endpoint answers from its VPP, which dies with it). As in Kubernetes, the forwarder learns of
// the deletion from the pod's pause process (sdk-vpp's nsmonitor) and closes the connections.
func replaceSecondVl3Endpoint(ctx context.Context, t *testing.T, r *vl3Run) {
	old := r.endpoints[1]
	since := time.Now()
	require.NoError(t, r.closeEndpoint(old), "the vl3 endpoint's SIGTERM and pod deletion")
	r.startEndpoint(ctx, t, 1, "nse-vl3-2b", r.endpointPayload(t))
	r.endpoints = slices.Delete(r.endpoints, 1, 2)
	alive := []string{r.endpoints[0].Name, r.endpoints[1].Name}
	for _, c := range r.clients {
		waitUntil(t, since.Add(2*healTimeout), 250*time.Millisecond, func() bool {
			if c.ReloadConnections() != nil || len(c.Connections) != 1 {
				return false
			}
			return slices.Contains(alive, c.Connections[0].GetNetworkServiceEndpointName())
		}, func() string {
			return fmt.Sprintf("%s did not heal onto %v within %s:\n%s", c.Name, alive, 2*healTimeout, c.Proc.LogTail(30))
		})
	}
}

// endpointPayload is the payload the run's endpoints were started with.
func (r *vl3Run) endpointPayload(t *testing.T) string {
	if r.d.RealVPP() {
		return "IP"
	}
	return "ETHERNET"
}

// replaceVl3Clients scales the clients to zero (SIGTERM: each closes its connection, and its pod
// must be left empty) and back to two new clients on the same nodes.
func replaceVl3Clients(ctx context.Context, t *testing.T, r *vl3Run) {
	for _, c := range r.clients {
		require.NoError(t, c.Close(), "%s's Close failed:\n%s", c.Name, c.Proc.LogTail(20))
		requireEventuallyEmpty(t, "deleted client pod "+c.Name, c.Pod.Netns)
		r.gone = append(r.gone, c)
	}
	r.clients = nil
	r.connectClient(ctx, t, 0, "nsc-vl3-3")
	r.connectClient(ctx, t, 1, "nsc-vl3-4")
}

// requireCloseLeavesNothing closes the clients, then stops the endpoints (the second closes its
// peering), and requires every pod, node namespace and VPP to be as before the first
// connection and the registry to hold no vl3 endpoint.
func (r *vl3Run) requireCloseLeavesNothing(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, c := range r.clients {
		require.NoError(t, c.Close(), "%s's Close failed:\n%s", c.Name, c.Proc.LogTail(20))
	}
	for i := len(r.endpoints) - 1; i >= 0; i-- {
		e := r.endpoints[i]
		require.NoError(t, e.Proc.Stop(10*time.Second), "%s did not stop cleanly:\n%s", e.Name, e.Proc.LogTail(20))
	}
	for _, c := range slices.Concat(r.gone, r.clients) {
		requireEventuallyEmpty(t, "client pod "+c.Name, c.Pod.Netns)
	}
	for _, e := range r.endpoints {
		requireEventuallyEmpty(t, "vl3 endpoint pod "+e.Name, e.Pod.Netns)
		if vpp, ok := r.ownVPPs[e.Name]; ok {
			requireVl3EndpointVPPIdle(ctx, t, vpp)
		}
	}
	for _, node := range r.d.Nodes {
		requireVPPClean(ctx, t, r.d, node)
		requireNodeKernelClean(t, node)
	}
	for _, e := range r.endpoints {
		requireEventuallyUnregistered(ctx, t, r.d, e.Name)
	}
}

// requireVl3EndpointVPPIdle waits until the stopped endpoint's own VPP holds exactly the
// interfaces it had before the endpoint served anything: no memif, no loopback left.
func requireVl3EndpointVPPIdle(ctx context.Context, t *testing.T, e *domain.VPPEndpoint) {
	t.Helper()
	var now []domain.VPPInterface
	var err error
	waitFor(t, 200*time.Millisecond, func() bool {
		now, err = e.Interfaces(ctx)
		return err == nil && sameInterfaces(now, e.IdleInterfaces())
	}, func() string {
		return fmt.Sprintf("%s's VPP after the endpoint stopped: %v (error %v), before it served %v", e.Name, now, err, e.IdleInterfaces())
	})
}
