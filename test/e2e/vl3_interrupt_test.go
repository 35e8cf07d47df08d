package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// interruptVl3Dataplanes is heal/vl3-dataplane-interrupt's step: for the first endpoint, then
// the second, every memif of its VPP is set down as upstream's README does (`vppctl show int`,
// then `vppctl set interface state <memif> down` on each), and every client must again ping
// every client and both endpoints' addresses. Nothing is restarted: the clients' data-path
// checks and the peering endpoint's (from its VPP) notice the broken paths, and the heals must
// give everyone a working path again. Upstream's runner retries each check until its timeout;
// here the pings must all pass within two heal timeouts of the interruption.
func interruptVl3Dataplanes(ctx context.Context, t *testing.T, r *vl3Run) {
	for _, e := range r.endpoints {
		vpp, ok := r.ownVPPs[e.Name]
		require.True(t, ok, "%s has no VPP of its own", e.Name)
		memifs := vppMemifNames(ctx, t, vpp)
		require.NotEmpty(t, memifs, "%s's VPP holds no memif", e.Name)
		for _, memif := range memifs {
			out, err := vpp.CLI(ctx, "set interface state "+memif+" down")
			require.NoError(t, err)
			require.Empty(t, strings.TrimSpace(out), "set %s down in %s's VPP", memif, e.Name)
		}
		t.Logf("%s: %v set down", e.Name, memifs)
		since := time.Now()
		failure := ""
		waitUntil(t, since.Add(2*healTimeout), time.Second, func() bool {
			failure = r.pingsFailure(ctx, t)
			return failure == ""
		}, func() string {
			return fmt.Sprintf("%s's memifs %v set down: the vl3 network did not heal within %s: %s", e.Name, memifs, 2*healTimeout, failure)
		})
		t.Logf("%s's memifs set down: every ping passes again after %s", e.Name, time.Since(since).Round(100*time.Millisecond))
	}
}

// vppMemifNames are the memif interfaces `show int` lists in the VPP.
func vppMemifNames(ctx context.Context, t *testing.T, vpp *domain.VPPEndpoint) []string {
	t.Helper()
	out, err := vpp.CLI(ctx, "show int")
	require.NoError(t, err)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && strings.HasPrefix(fields[0], "memif") {
			names = append(names, fields[0])
		}
	}
	return names
}

// pingsFailure is requirePings(endpoints too) as a probe: the clients' connections are read
// again (a heal may have given one a new address, as upstream's loop reads nsm-1 again), and the
// first ping that fails is described; "" when all pass.
func (r *vl3Run) pingsFailure(ctx context.Context, t *testing.T) string {
	var targets []string
	for _, c := range r.clients {
		if err := c.ReloadConnections(); err != nil || len(c.Connections) != 1 {
			return fmt.Sprintf("%s's connections: %v (%d)", c.Name, err, len(c.Connections))
		}
		for _, src := range c.Connections[0].GetContext().GetIpContext().GetSrcIpAddrs() {
			targets = append(targets, strings.Split(src, "/")[0])
		}
	}
	targets = append(targets, r.endpointAddrs(t)...)
	for _, pinger := range r.clients {
		if failure := pingFailure(ctx, pinger.Name, pinger.Pod.Netns, targets); failure != "" {
			return failure
		}
	}
	return ""
}

// pingFailure pings every target from netns, the pod of name, and describes the first ping that
// fails; "" when all pass.
func pingFailure(ctx context.Context, name, netns string, targets []string) string {
	for _, target := range targets {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netns,
			"ping", "-c", "2", "-i", "0.5", "-W", "2", target).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s pings %s: %v\n%s", name, target, err, out)
		}
	}
	return ""
}
