package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/inspect"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
)

// metricsAddress is where the forwarders serve /metrics, inside their node's namespace.
const metricsAddress = "127.0.0.1:18081"

// Two things an operator relies on after a crash, on one connection with a policy route over taps
// (simulator), with the metrics pipeline on as TELEMETRY=true PROMETHEUS=true switch it on:
// `forwarder-vpp inspect` lists the connection, healthy, while the forwarder runs, after it was
// SIGKILLed, and after its client was SIGKILLed too (an OOM kill), and shows nothing once the
// restarted forwarder released the dead client's connection; it never writes, and it reports an
// orphan and foreign state planted in the client's pod. /metrics shows the Requests and the
// journal and policy-route writes of the first run, then what the restarted run found and
// released when the dead client's connection expired.
func TestInspectAndMetricsAcrossCrashes(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := scenario{tag: "insp", kernelType: "tap", linkType: "tuntap", nodes: 1, tokenLifetime: expiryLifetime, requestTimeout: crashRequestTimeout,
		forwarderEnv: []string{"TELEMETRY=true", "PROMETHEUS=true", "NSM_PROMETHEUS_LISTEN_ON=" + metricsAddress, "NSM_OPEN_TELEMETRY_ENDPOINT=127.0.0.1:4317"}}
	ctx, d, nse, client, view := connectWithPolicy(t, sc)
	node := d.Nodes[0]

	first := scrape(t, node)
	first.requireAtLeast(t, 1, "forwarder_vpp_request_duration_seconds", "result", "ok")
	first.requireAtLeast(t, 1, "forwarder_vpp_journal_writes_total", "result", "ok")
	first.requireAtLeast(t, 1, "forwarder_vpp_policyroute_writes_total", "kind", "added")
	first.requireAtLeast(t, 1, "forwarder_vpp_journal_records")

	pods := []string{client.Pod.Netns, nse.Pod.Netns}
	for _, netns := range append([]string{node.Netns}, pods...) {
		// The kernel's own late writes (IPv6 link-local addresses) are not inspect's.
		require.NoError(t, topology.WaitAddressesSettled(netns, 10*time.Second))
	}
	healthy := inspectWithoutWrites(ctx, t, d, node, pods)
	require.True(t, healthy.Journal.ForwarderRunning, "the running forwarder's journal lock was not seen")
	conn := requireOneConnection(t, healthy, "with the forwarder running")
	requireConnectionHealthy(t, conn, clientIfname, view.nseIfname)
	require.Empty(t, healthy.Orphans)
	require.Empty(t, healthy.Foreign)
	text, err := d.RunForwarderCommand(ctx, node, "inspect")
	require.NoError(t, err)
	require.Contains(t, string(text), "CONNECTION "+conn.ID+": healthy", "the readable report:\n%s", text)
	t.Logf("INSPECT with the forwarder running:\n%s", text)

	requirePlantedStateReported(ctx, t, d, node, client.Pod.Netns)

	node.Forwarder.Kill()
	afterCrash := inspectWithoutWrites(ctx, t, d, node, pods)
	require.False(t, afterCrash.Journal.ForwarderRunning, "the dead forwarder's journal still looks locked")
	requireConnectionHealthy(t, requireOneConnection(t, afterCrash, "after the forwarder's SIGKILL"), clientIfname, view.nseIfname)

	// The client is OOM-killed, and its nsmgr with it so that no Close reaches the forwarder.
	client.Kill()
	node.Nsmgr.Kill()
	leftover := inspectWithoutWrites(ctx, t, d, node, pods)
	requireConnectionHealthy(t, requireOneConnection(t, leftover, "after the client's SIGKILL"), clientIfname, view.nseIfname)
	require.NoError(t, d.RespawnNsmgr(ctx, node))
	require.NoError(t, d.RespawnForwarder(ctx, node))
	restartedAt := time.Now()

	found := scrape(t, node)
	found.requireAtLeast(t, 1, "forwarder_vpp_leftovers_found_total", "kind", "connection")
	found.requireAtLeast(t, 2, "forwarder_vpp_leftovers_found_total", "kind", "tap")

	var state *topology.State
	waitUntil(t, restartedAt.Add(expiryLifetime+expiryMargin), 250*time.Millisecond, func() bool {
		state, err = topology.Inspect(client.Pod.Netns)
		return err == nil && isPristine(state)
	}, func() string {
		return fmt.Sprintf("the dead client's pod still holds NSM state %s after the forwarder's restart (%v):\n%s", time.Since(restartedAt).Round(time.Second), err, state)
	})
	released := inspectJSON(ctx, t, d, node)
	require.Empty(t, released.Connections, "connections left after the dead client's connection was released")
	require.Empty(t, released.Orphans)
	require.Empty(t, released.Foreign)

	last := scrape(t, node)
	last.requireAtLeast(t, 1, "forwarder_vpp_expiry_releases_total", "reason", "restart_grace")
	last.requireAtLeast(t, 1, "forwarder_vpp_leftovers_released_total", "kind", "connection")
	last.requireAtLeast(t, 2, "forwarder_vpp_leftovers_released_total", "kind", "tap")
	last.requireAtLeast(t, 1, "forwarder_vpp_leftovers_released_total", "kind", "kernel_state")
	require.Zero(t, last.sum("forwarder_vpp_journal_records"), "journal records after the release")
	t.Logf("METRICS after the restart and the release:\n%s", last.lines("forwarder_vpp_"))

	requireIdle(ctx, t, d, client, nse)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// inspectWithoutWrites runs inspect -json and requires that neither the pods, the node's namespace
// nor VPP saw any change while it ran.
func inspectWithoutWrites(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, pods []string) *inspect.Report {
	t.Helper()
	before, err := d.VPPInterfaces(ctx, node)
	require.NoError(t, err)
	watches := map[string]*netwatch.Watch{}
	for _, netns := range append([]string{node.Netns}, pods...) {
		watches[netns] = watchPod(t, netns)
	}
	report := inspectJSON(ctx, t, d, node)
	for netns, w := range watches {
		events, err := w.Stop()
		require.NoError(t, err)
		require.Empty(t, events, "inspect changed namespace %s", netns)
	}
	after, err := d.VPPInterfaces(ctx, node)
	require.NoError(t, err)
	require.Equal(t, before, after, "inspect changed VPP's interfaces")
	return report
}

func inspectJSON(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) *inspect.Report {
	t.Helper()
	out, err := d.RunForwarderCommand(ctx, node, "inspect", "-json")
	require.NoError(t, err)
	report := &inspect.Report{}
	require.NoError(t, json.Unmarshal(out, report), "inspect -json printed:\n%s", out)
	require.Empty(t, report.VPP.Error)
	require.Empty(t, report.Journal.Error)
	return report
}

func requireOneConnection(t *testing.T, r *inspect.Report, when string) *inspect.Connection {
	t.Helper()
	require.Len(t, r.Connections, 1, "inspect %s: %+v", when, r)
	return r.Connections[0]
}

// requireConnectionHealthy requires everything the record names to be there: a tap on each side with
// its cross-connect, the client's interface with its address, a policy table with its rule and route,
// and the endpoint's interface.
func requireConnectionHealthy(t *testing.T, c *inspect.Connection, clientIf, nseIf string) {
	t.Helper()
	dump, _ := json.MarshalIndent(c, "", "  ")
	require.Empty(t, c.Problems, "%s", dump)
	require.Len(t, c.Sides, 2, "%s", dump)
	for _, side := range c.Sides {
		require.Len(t, side.VPP, 1, "%s side: %s", side.Side, dump)
		require.Equal(t, "tap", side.VPP[0].Kind, "%s", dump)
		require.NotEmpty(t, side.VPP[0].XConnects, "%s side has no cross-connect: %s", side.Side, dump)
		require.NotNil(t, side.Kernel, "%s", dump)
		require.Equal(t, "present", side.Kernel.Namespace, "%s", dump)
		require.NotEmpty(t, side.Kernel.Addresses, "%s", dump)
	}
	client, nse := c.Sides[0].Kernel, c.Sides[1].Kernel
	require.Equal(t, clientIf, client.Interface)
	require.Equal(t, nseIf, nse.Interface)
	require.NotEmpty(t, client.Policies, "no policy table: %s", dump)
	require.NotEmpty(t, client.Policies[0].Rules, "%s", dump)
	require.NotEmpty(t, client.Policies[0].Routes, "%s", dump)
	require.Equal(t, c.ID, c.Record.ID)
	require.NotNil(t, c.Record.Committed)
}

// requirePlantedStateReported adds to the client's pod a route carrying the forwarder's mark that no
// connection accounts for, and a rule without the mark in the forwarder's table range: inspect must
// report the first as an orphan and the second as foreign. Both are removed again.
func requirePlantedStateReported(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node, pod string) {
	t.Helper()
	const orphanTable, foreignTable = "268435461", "268435462"
	ip := func(args ...string) {
		out, err := exec.CommandContext(ctx, "ip", append([]string{"-n", pod}, args...)...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	ip("route", "add", "blackhole", "192.0.2.0/24", "table", orphanTable, "proto", "250")
	ip("rule", "add", "from", "192.0.2.1", "table", foreignTable, "priority", "31000")
	defer ip("rule", "del", "from", "192.0.2.1", "table", foreignTable, "priority", "31000")
	defer ip("route", "del", "blackhole", "192.0.2.0/24", "table", orphanTable, "proto", "250")
	r := inspectJSON(ctx, t, d, node)
	require.Len(t, r.Orphans, 1, "%+v", r.Orphans)
	require.Contains(t, r.Orphans[0].What, "192.0.2.0/24")
	require.Len(t, r.Foreign, 1, "%+v", r.Foreign)
	require.Contains(t, r.Foreign[0].What, "table "+foreignTable)
	requireConnectionHealthy(t, requireOneConnection(t, r, "with planted state"), clientIfname, r.Connections[0].Sides[1].Kernel.Interface)
	require.True(t, strings.HasPrefix(r.Orphans[0].Where, "namespace inode://"), "%+v", r.Orphans[0])
}
