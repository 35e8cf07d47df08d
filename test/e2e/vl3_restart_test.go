package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVl3ForwarderRestart is not an upstream example: it restarts (SIGKILL, then the same name,
// as a crashed container) the forwarder of node 1 under vl3-basic's network with the endpoints'
// own VPPs. That forwarder carries a loop back to one endpoint (endpoint 1's connection to
// itself: its pod's kernel interface joined to a memif into its own VPP), beside client 1's
// connection and one end of the peering. Recovery must adopt all of them: every client pings
// every client and both endpoints again, each endpoint pod pings both endpoints through its
// connection to itself, and Close leaves nothing in any pod, VPP or node namespace.
func TestVl3ForwarderRestart(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	ex := vl3Example{name: "vl3-forwarder-restart", tag: "hfr", service: "vl3", families: []vl3Family{vl3IPv4},
		endpointsPing: true, ownVPP: true, realVPPOnly: true,
		step: &vl3Step{"node 1's forwarder SIGKILLed and restarted; every client and endpoint pod pings again",
			restartVl3Forwarder}}
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runVl3Example(t, ex, realVPP)
	})
}

// restartVl3Forwarder kills node 1's forwarder and starts it again, then waits until every
// client pings every client and both endpoints, and every endpoint pod both endpoints.
func restartVl3Forwarder(ctx context.Context, t *testing.T, r *vl3Run) {
	since := time.Now()
	require.NoError(t, r.d.RestartForwarder(ctx, r.d.Nodes[0]))
	failure := ""
	waitUntil(t, since.Add(2*healTimeout), time.Second, func() bool {
		previous := failure
		if failure = r.pingsFailure(ctx, t); failure == "" {
			failure = r.endpointPingsFailure(ctx, t)
		}
		// Each new failing ping, as it comes: what the heal time is spent on.
		if failure != "" && firstLine(failure) != firstLine(previous) {
			t.Logf("%s after the restart: %s", time.Since(since).Round(100*time.Millisecond), firstLine(failure))
		}
		return failure == ""
	}, func() string {
		return fmt.Sprintf("after node 1's forwarder restart the vl3 network did not heal within %s: %s", 2*healTimeout, failure)
	})
	t.Logf("node 1's forwarder restarted: every ping passes again after %s", time.Since(since).Round(100*time.Millisecond))
}

// endpointPingsFailure is requireEndpointPings as a probe: the first failing ping, "" for none.
func (r *vl3Run) endpointPingsFailure(ctx context.Context, t *testing.T) string {
	targets := r.endpointAddrs(t)
	for _, pinger := range r.endpoints {
		if failure := pingFailure(ctx, pinger.Name, pinger.Pod.Netns, targets); failure != "" {
			return failure
		}
	}
	return ""
}

// TestVl3EndpointCrash is vl3-nse-death with the endpoint crashing instead of stopping: the
// second endpoint is SIGKILLed, so it closes neither its connection to itself nor its peering,
// then its pod (VPP, namespace) is deleted and a new endpoint starts on its node. The forwarder
// of node 2 must release the dead endpoint's loop back to itself and its clients' and peer's
// connections by itself (its pod is gone); every client heals onto a live endpoint and pings
// the others; Close leaves nothing in any pod, VPP or node namespace. Not an upstream example.
func TestVl3EndpointCrash(t *testing.T) {
	// Two real-VPP runs on 3 Dec 2026 with within: scenarioTime (4 min) ran out while
	// requireDeadPeeringReleased still waited. In the second (logs kept), neither forwarder saw a
	// Close of the crashed endpoint's peering in the 3.5 min between the kill and the run's end:
	// its client died with it, nothing notices a dead memif client, and its tokens expire after
	// 10 min. An earlier run saw the release at 76 s. README, known gaps.
	t.Skip("issue 24: a crashed vl3 endpoint's peering is released only at its expiry (10 min), past the run's 4 minutes")
	if os.Getenv("E2E_UPSTREAM_SLOW") == "" {
		t.Skip("issue 24: beyond make test's time budget; E2E_UPSTREAM_SLOW=1 (make upstream-slow) runs it")
	}
	ex := vl3Example{name: "vl3-endpoint-crash", tag: "hfc", service: "vl3", families: []vl3Family{vl3IPv4},
		// The crashed endpoint's peering, whose dead end is its client, goes only at its expiry
		// (76 s after the kill in a run of 3 Dec 2026), past shortScenarioTime.
		ownVPP: true, realVPPOnly: true, within: scenarioTime,
		step: &vl3Step{"the second vl3 endpoint SIGKILLed and its pod deleted, a new one ready",
			func(ctx context.Context, t *testing.T, r *vl3Run) {
				r.endpoints[1].Kill()
				replaceSecondVl3Endpoint(ctx, t, r)
				requireDeadPeeringReleased(ctx, t, r)
			}}}
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runVl3Example(t, ex, realVPP)
	})
}

// requireDeadPeeringReleased waits until the first endpoint's VPP holds one memif per live
// connection to it: its connection to itself, its clients' and the new endpoint's peering. The
// crashed endpoint never closed its peering and NSM has no monitor of a dead client: the
// forwarders release it when it expires (about 80 s here), and the close reaches the first
// endpoint's VPP then, which must happen before that endpoint stops.
func requireDeadPeeringReleased(ctx context.Context, t *testing.T, r *vl3Run) {
	first := r.endpoints[0]
	vpp, ok := r.ownVPPs[first.Name]
	require.True(t, ok, "%s has no VPP of its own", first.Name)
	want := 2 // its connection to itself, the new endpoint's peering
	for _, c := range r.clients {
		if c.Connections[0].GetNetworkServiceEndpointName() == first.Name {
			want++
		}
	}
	var memifs []string
	waitUntil(t, time.Now().Add(3*time.Minute), time.Second, func() bool {
		memifs = vppMemifNames(ctx, t, vpp)
		return len(memifs) == want
	}, func() string {
		return fmt.Sprintf("%s's VPP holds memifs %v, want %d (the crashed endpoint's peering not released)", first.Name, memifs, want)
	})
}

// firstLine is s up to its first line break: a failing ping's verdict without its output.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
