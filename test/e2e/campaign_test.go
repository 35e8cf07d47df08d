package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The crash campaign (issue 27): one node, veth, 30 s tokens, clients with a policy route each
// under connect, refresh, close and reconnect churn, while seeded random SIGKILLs hit the
// forwarder, the nsmgr and clients (a killed client is either started again in its pod with the
// same connection ID, as a cmd-nsc container restart does, or left dead). Foreign objects are
// planted first. After the last kill and the token lifetime plus a margin, nothing of the
// forwarder's may be left in any pod, the node, VPP or the journal, every foreign object must be
// as it was, and a fresh client must still ping.
//
// E2E_CAMPAIGN_SEED (or E2E_CAMPAIGN_SEEDS=1,2,3) chooses the seeds, E2E_CAMPAIGN_KILLS the
// number of kills per seed (campaignShortKills by default, which `make test` runs). The real-VPP
// variant runs only for a campaign asked for with E2E_CAMPAIGN_KILLS (`make crash-campaign`).
func TestCrashCampaign(t *testing.T) {
	seeds, kills, long := campaignSettings(t)
	var figures campaignFigures
	t.Cleanup(func() { figures.print(t) })
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP != "" && !long {
			t.Skip("the real-VPP campaign runs with E2E_CAMPAIGN_KILLS set (make crash-campaign)")
		}
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				runCampaign(t, seed, kills, realVPP, &figures)
			})
		}
	})
}

const (
	// campaignShortKills is `make test`'s campaign: a few kills, within about three minutes.
	campaignShortKills = 6
	campaignClients    = 4
	// campaignLifetime is every program's token lifetime, campaignMargin how long after it
	// (from the last kill) what a dead connection held may linger.
	campaignLifetime = 30 * time.Second
	campaignMargin   = 20 * time.Second
	// foreignTable is in the forwarder's policy-table range (policyroute.DefaultTableRange), its
	// rule and route another protocol's (static).
	foreignTable    = "268435470"
	foreignProtocol = 4 // RTPROT_STATIC
	foreignVPPTag   = "calico-pod-1"
)

func campaignSettings(t *testing.T) (seeds []uint64, kills int, long bool) {
	t.Helper()
	kills = campaignShortKills
	if v := os.Getenv("E2E_CAMPAIGN_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "E2E_CAMPAIGN_KILLS")
		kills, long = n, true
	}
	list := os.Getenv("E2E_CAMPAIGN_SEEDS")
	if list == "" {
		list = os.Getenv("E2E_CAMPAIGN_SEED")
	}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "E2E_CAMPAIGN_SEED(S) entry %q", s)
		seeds = append(seeds, seed)
	}
	if len(seeds) == 0 {
		seeds = []uint64{uint64(time.Now().UnixNano() % 1_000_000)}
	}
	return seeds, kills, long
}

// campaignResult is one seed's figures.
type campaignResult struct {
	backend, seed   string
	kills           map[string]int
	closes          int
	left, touched   []string
	took            time.Duration
	passed, skipped bool
}

type campaignFigures struct {
	mu      sync.Mutex
	results []campaignResult
}

func (f *campaignFigures) add(r campaignResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results = append(f.results, r)
}

func (f *campaignFigures) print(t *testing.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The table, for docs/crash-campaign.md (`make crash-campaign` keeps the output's tables).
	table := []string{
		"| VPP | seed | forwarder kills | nsmgr kills | clients restarted | clients left dead | closes | objects left | foreign touched | took | passed |",
		"|---|---|---|---|---|---|---|---|---|---|---|",
	}
	for _, r := range f.results {
		if r.skipped {
			continue
		}
		table = append(table, fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %s | %t |", r.backend, r.seed,
			r.kills["forwarder"], r.kills["nsmgr"], r.kills["client restarted"], r.kills["client left dead"], r.closes,
			len(r.left), len(r.touched), r.took.Round(time.Second), r.passed))
	}
	if len(table) > 2 {
		t.Logf("CAMPAIGN table\n%s", strings.Join(table, "\n"))
	}
	for _, r := range f.results {
		if r.skipped {
			continue
		}
		t.Logf("CAMPAIGN %s seed=%s: kills forwarder=%d nsmgr=%d client-restarted=%d client-left-dead=%d, closes=%d; objects left %d, foreign touched %d; %s; passed=%t",
			r.backend, r.seed, r.kills["forwarder"], r.kills["nsmgr"], r.kills["client restarted"], r.kills["client left dead"], r.closes,
			len(r.left), len(r.touched), r.took.Round(time.Second), r.passed)
	}
}

// campaign is one seed's run.
type campaign struct {
	t       *testing.T
	d       *domain.Domain
	node    *domain.Node
	rng     *rand.Rand
	live    []*domain.Client
	named   int
	result  *campaignResult
	foreign foreignObjects
}

// foreignObjects are what another agent made on the node: the campaign must find each as it was.
type foreignObjects struct {
	vpp      domain.VPPInterface
	vethA    string // linkIdentity in the node namespace, with its alias
	vethB    string
	pod      string
	podRule  topology.Rule
	podRoute topology.Route
}

// runCampaign runs one seed and adds its figures, also when it fails (t.Fatal ends it early).
func runCampaign(t *testing.T, seed uint64, kills int, realVPP string, figures *campaignFigures) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	backend := "vppsim"
	if realVPP != "" {
		backend = "vpp"
	}
	result := campaignResult{backend: backend, seed: fmt.Sprint(seed), kills: map[string]int{}}
	started := time.Now()
	defer func() {
		result.took = time.Since(started)
		result.passed = !t.Failed()
		result.skipped = t.Skipped()
		figures.add(result)
	}()
	t.Logf("CAMPAIGN seed %d on %s, %d kills (E2E_CAMPAIGN_SEED=%d E2E_CAMPAIGN_KILLS=%d reproduces it)", seed, backend, kills, seed, kills)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*8*time.Second+5*time.Minute)
	defer cancel()
	sc := scenario{tag: "camp", kernelType: "veth", linkType: "veth", nodes: 1, tokenLifetime: campaignLifetime, requestTimeout: crashRequestTimeout, realVPP: realVPP}
	d := startDomain(ctx, t, sc)
	c := &campaign{t: t, d: d, node: d.Nodes[0], rng: rand.New(rand.NewPCG(seed, 27)), result: &result}
	nse, err := d.StartEndpoint(ctx, c.node, "nse", service, endpointCIDR, domain.WithPolicyRoutes(policyPrefix))
	require.NoError(t, err)

	c.plantNodeForeign(ctx)
	for range campaignClients {
		c.startClient()
	}
	for _, client := range c.live {
		waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
		require.NoError(t, client.WaitGranted(waitCtx), "%s was not granted its connection:\n%s", client.Name, client.Proc.LogTail(20))
		cancelWait()
	}
	c.plantPodForeign(ctx, c.live[0].Pod.Netns)

	for done := 0; done < kills; {
		time.Sleep(time.Duration(500+c.rng.IntN(2500)) * time.Millisecond)
		if c.act(ctx) {
			done++
		}
	}
	lastKill := time.Now()
	t.Logf("CAMPAIGN seed %d: last kill at %s; closing the %d live clients, then waiting for the token lifetime", seed, lastKill.Format(time.TimeOnly), len(c.live))
	for _, client := range c.live {
		if closeErr := client.Close(); closeErr != nil {
			// Its connection must expire instead; the tear-down need not report it again.
			t.Logf("%s's Close failed (its connection must expire): %v", client.Name, closeErr)
			client.Kill()
		}
	}
	var left []leftover
	waitUntilQuietly(lastKill.Add(campaignLifetime+campaignMargin), func() bool {
		left = c.leftovers(ctx)
		return len(left) == 0
	})
	if len(left) == 0 {
		fresh, connectErr := d.Connect(ctx, c.node, "fresh", fmt.Sprintf("kernel://%s/%s", service, clientIfname))
		require.NoError(t, connectErr, "a fresh client was not granted its connection after the campaign")
		for _, dst := range fresh.Connections[0].GetContext().GetIpContext().GetDstIpAddrs() {
			requirePing(ctx, t, fresh.Pod.Netns, clientIfname, dst)
		}
		require.NoError(t, fresh.Close(), "the fresh client's Close failed:\n%s", fresh.Proc.LogTail(20))
		waitUntilQuietly(time.Now().Add(settleTime), func() bool {
			left = c.leftovers(ctx)
			return len(left) == 0
		})
	}
	touched := c.foreignTouched(ctx)
	for _, l := range left {
		result.left = append(result.left, l.what)
	}
	result.touched = touched
	if len(left) > 0 || len(touched) > 0 {
		t.Fatalf("CAMPAIGN seed %d (E2E_CAMPAIGN_SEED=%d): %s after the last kill, %d objects of the forwarder's left, %d foreign objects touched:\n%s",
			seed, seed, time.Since(lastKill).Round(time.Second), len(left), len(touched), c.describe(left, touched))
	}
	if ourDesign(d) {
		requireJournalEmpty(ctx, t, d, c.node)
	}
	requireEndpointUnregisters(ctx, t, d, nse)
}

// act does one random thing to the domain and says whether it was a kill.
func (c *campaign) act(ctx context.Context) bool {
	t := c.t
	switch r := c.rng.IntN(100); {
	case r < 30:
		t.Logf("campaign: SIGKILL forwarder")
		require.NoError(t, c.d.RestartForwarder(ctx, c.node))
		c.result.kills["forwarder"]++
		return true
	case r < 50:
		t.Logf("campaign: SIGKILL nsmgr")
		require.NoError(t, c.d.RestartNsmgr(ctx, c.node))
		c.result.kills["nsmgr"]++
		return true
	case r < 85 && len(c.live) > 0:
		i := c.rng.IntN(len(c.live))
		client := c.live[i]
		client.Kill()
		if c.rng.IntN(2) == 0 {
			t.Logf("campaign: SIGKILL %s, started again in its pod", client.Name)
			require.NoError(t, client.StartAgain())
			c.result.kills["client restarted"]++
			return true
		}
		t.Logf("campaign: SIGKILL %s, left dead", client.Name)
		c.live = append(c.live[:i], c.live[i+1:]...)
		c.startClient()
		c.result.kills["client left dead"]++
		return true
	case len(c.live) > 0:
		client := c.live[c.rng.IntN(len(c.live))]
		t.Logf("campaign: %s closes and connects again in its pod", client.Name)
		if err := client.Close(); err != nil {
			t.Logf("campaign: %s's Close failed: %v", client.Name, err)
		}
		require.NoError(t, client.StartAgain())
		c.result.closes++
	}
	return false
}

// startClient starts one more client in a pod of its own; it is granted in the background.
func (c *campaign) startClient() {
	name := fmt.Sprintf("c%d", c.named)
	c.named++
	client, err := c.d.StartClient(c.node, name, fmt.Sprintf("kernel://%s/%s", service, clientIfname))
	require.NoError(c.t, err)
	c.live = append(c.live, client)
}

// plantNodeForeign adds a tagged loopback to VPP and a veth pair whose aliases look like the
// forwarder's to the node's namespace.
func (c *campaign) plantNodeForeign(ctx context.Context) {
	t := c.t
	var err error
	c.foreign.vpp, err = c.d.PlantVPPLoopback(ctx, c.node, foreignVPPTag)
	require.NoError(t, err)
	ip := func(netns string, args ...string) {
		out, ipErr := exec.CommandContext(ctx, "ip", append([]string{"-n", netns}, args...)...).CombinedOutput()
		require.NoError(t, ipErr, "ip %v: %s", args, out)
	}
	ip(c.node.Netns, "link", "add", "fgn0", "type", "veth", "peer", "name", "fgn1")
	ip(c.node.Netns, "link", "set", "fgn0", "alias", "veth-client-foreign-agent")
	ip(c.node.Netns, "link", "set", "fgn1", "alias", "veth-server-foreign-agent")
	c.foreign.vethA, c.foreign.vethB = c.vethIdentity("fgn0"), c.vethIdentity("fgn1")
	// The node's idle state now includes them: what is left is compared with it.
	c.node.IdleKernel, err = topology.Inspect(c.node.Netns)
	require.NoError(t, err)
}

func (c *campaign) vethIdentity(name string) string {
	id, err := linkIdentityOrError(c.node.Netns, name)
	if err != nil {
		return "gone: " + err.Error()
	}
	state, err := topology.Inspect(c.node.Netns)
	if err != nil {
		return id + " (" + err.Error() + ")"
	}
	link, _ := state.Link(name)
	return id + " alias " + link.Alias
}

// plantPodForeign adds to a client's pod a rule and a route in the forwarder's table range,
// of another protocol.
func (c *campaign) plantPodForeign(ctx context.Context, pod string) {
	t := c.t
	for _, args := range [][]string{
		{"route", "add", "blackhole", "203.0.113.0/24", "table", foreignTable, "proto", "static"},
		{"rule", "add", "from", "192.0.2.77", "table", foreignTable, "priority", "31000", "protocol", "static"},
	} {
		out, err := exec.CommandContext(ctx, "ip", append([]string{"-n", pod}, args...)...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	table, _ := strconv.Atoi(foreignTable)
	c.foreign.pod = pod
	c.foreign.podRule = topology.Rule{Priority: 31000, Src: "192.0.2.77/32", Table: table, Protocol: foreignProtocol}
	c.foreign.podRoute = topology.Route{Table: table, Dst: "203.0.113.0/24", Protocol: foreignProtocol}
	state, err := topology.Inspect(pod)
	require.NoError(t, err)
	require.True(t, contains(state.Rules, c.foreign.podRule), "the planted rule is not as expected: %v", state.Rules)
	require.True(t, contains(state.Routes, c.foreign.podRoute), "the planted route is not as expected: %v", state.Routes)
}

// leftover is one object of the forwarder's that should be gone, and the words its log lines
// would name it by.
type leftover struct {
	what string
	keys []string
}

// leftovers lists what no connection should hold any more: in every pod anything but loopback
// and the planted rule and route, in the node anything its idle state (with the planted veths)
// does not have, in VPP any interface beyond the idle ones and the planted loopback.
func (c *campaign) leftovers(ctx context.Context) []leftover {
	var left []leftover
	for _, pod := range c.d.Topology.Pods() {
		state, err := topology.Inspect(pod.Netns)
		if err != nil {
			left = append(left, leftover{what: fmt.Sprintf("pod %s: %v", pod.Name, err)})
			continue
		}
		for _, l := range state.Links {
			switch {
			case l.Name != "lo":
				left = append(left, leftover{what: fmt.Sprintf("pod %s: %s link %s %v", pod.Name, l.Type, l.Name, l.Addrs), keys: append([]string{l.Name}, bareAddrs(l.Addrs)...)})
			case !sameAsLoopback(l.Addrs):
				left = append(left, leftover{what: fmt.Sprintf("pod %s: lo addresses %v", pod.Name, l.Addrs)})
			}
		}
		for _, r := range state.Routes {
			if pod.Netns == c.foreign.pod && r == c.foreign.podRoute {
				continue
			}
			left = append(left, leftover{what: fmt.Sprintf("pod %s: route %+v", pod.Name, r), keys: []string{bareAddr(r.Dst), fmt.Sprintf("table %d", r.Table), strconv.Itoa(r.Table)}})
		}
		for _, r := range state.Rules {
			if pod.Netns == c.foreign.pod && r == c.foreign.podRule {
				continue
			}
			left = append(left, leftover{what: fmt.Sprintf("pod %s: rule %+v", pod.Name, r), keys: []string{bareAddr(r.Src), strconv.Itoa(r.Table)}})
		}
	}
	state, err := topology.Inspect(c.node.Netns)
	if err != nil {
		left = append(left, leftover{what: fmt.Sprintf("node: %v", err)})
	} else {
		for _, l := range state.Links {
			if _, known := c.node.IdleKernel.Link(l.Name); !known {
				left = append(left, leftover{what: fmt.Sprintf("node: %s link %s alias %q", l.Type, l.Name, l.Alias), keys: []string{l.Name, l.Alias}})
			}
		}
		for _, r := range state.Routes {
			if !contains(c.node.IdleKernel.Routes, r) {
				left = append(left, leftover{what: fmt.Sprintf("node: route %+v", r), keys: []string{bareAddr(r.Dst)}})
			}
		}
		for _, r := range state.Rules {
			if !contains(c.node.IdleKernel.Rules, r) {
				left = append(left, leftover{what: fmt.Sprintf("node: rule %+v", r), keys: []string{bareAddr(r.Src)}})
			}
		}
	}
	interfaces, err := c.d.VPPInterfaces(ctx, c.node)
	if err != nil {
		return append(left, leftover{what: fmt.Sprintf("%s: %v", c.d.VPPName(), err)})
	}
	for _, i := range interfaces {
		if i == c.foreign.vpp || contains(c.node.IdleInterfaces, i) {
			continue
		}
		keys := []string{i.Name}
		if i.Tag != "" {
			keys = append(keys, i.Tag)
		}
		left = append(left, leftover{what: fmt.Sprintf("%s: %s interface %s (sw_if_index %d, tag %q)", c.d.VPPName(), i.Kind, i.Name, i.SwIfIndex, i.Tag), keys: keys})
	}
	return left
}

// foreignTouched lists the planted objects that are no longer as they were.
func (c *campaign) foreignTouched(ctx context.Context) []string {
	var touched []string
	interfaces, err := c.d.VPPInterfaces(ctx, c.node)
	if err != nil || !contains(interfaces, c.foreign.vpp) {
		touched = append(touched, fmt.Sprintf("%s: the planted %+v is gone or changed (%v)", c.d.VPPName(), c.foreign.vpp, err))
	}
	for name, was := range map[string]string{"fgn0": c.foreign.vethA, "fgn1": c.foreign.vethB} {
		if now := c.vethIdentity(name); now != was {
			touched = append(touched, fmt.Sprintf("node: the planted veth was %q, is %q", was, now))
		}
	}
	state, err := topology.Inspect(c.foreign.pod)
	switch {
	case err != nil:
		touched = append(touched, fmt.Sprintf("pod %s: %v", c.foreign.pod, err))
	default:
		if !contains(state.Rules, c.foreign.podRule) {
			touched = append(touched, fmt.Sprintf("pod %s: the planted rule %+v is gone", c.foreign.pod, c.foreign.podRule))
		}
		if !contains(state.Routes, c.foreign.podRoute) {
			touched = append(touched, fmt.Sprintf("pod %s: the planted route %+v is gone", c.foreign.pod, c.foreign.podRoute))
		}
	}
	return touched
}

// describe renders what was left and touched with the forwarder's log lines that name each.
func (c *campaign) describe(left []leftover, touched []string) string {
	var b strings.Builder
	logData, _ := os.ReadFile(c.node.Forwarder.LogPath())
	lines := strings.Split(string(logData), "\n")
	for _, l := range left {
		fmt.Fprintf(&b, "LEFT %s\n", l.what)
		shown := 0
		for _, line := range lines {
			if shown == campaignLogLines {
				break
			}
			for _, key := range l.keys {
				if key != "" && strings.Contains(line, key) {
					fmt.Fprintf(&b, "    %s\n", line)
					shown++
					break
				}
			}
		}
	}
	for _, what := range touched {
		fmt.Fprintf(&b, "TOUCHED %s\n", what)
	}
	fmt.Fprintf(&b, "forwarder log: %s", c.node.Forwarder.LogPath())
	return b.String()
}

// campaignLogLines bounds the forwarder's log lines shown per leftover.
const campaignLogLines = 12

// waitUntilQuietly polls done every half second until it says yes or deadline passes.
func waitUntilQuietly(deadline time.Time, done func() bool) {
	for !done() && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
}

func sameAsLoopback(addrs []string) bool {
	for _, a := range addrs {
		if a != "127.0.0.1/8" && a != "::1/128" {
			return false
		}
	}
	return true
}

func bareAddr(cidr string) string {
	addr, _, _ := strings.Cut(cidr, "/")
	return addr
}

func bareAddrs(cidrs []string) []string {
	out := make([]string, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, bareAddr(c))
	}
	return out
}

// contains says whether list holds item.
func contains[T comparable](list []T, item T) bool {
	for _, x := range list {
		if x == item {
			return true
		}
	}
	return false
}
