package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

const (
	// baselineConnections are held together and then closed: a leak of one goroutine or
	// descriptor per connection stands out from baselineSlack.
	baselineConnections = 20
	baselineClients     = 2
	// baselineSlack absorbs what comes and goes whatever the connections (gRPC keepalive
	// pings, the pprof request being answered, a timer's goroutine).
	baselineSlack = 3
	// baselineSettle is how long the forwarder may take to let go once the last Close returned:
	// the client namespaces' descriptors that came with the Requests are held for
	// fdtransport.DefaultRetention after they last arrived.
	baselineSettle = fdtransport.DefaultRetention + 30*time.Second
)

// The forwarder process as a whole (the real binary, its gRPC servers and dials, monitor streams,
// journal, VPP and netlink clients) holds the same goroutines and open descriptors once
// baselineConnections connections, held together with a policy route each, have closed, as it
// held before them. The baseline is taken after one connection opened and closed: what the
// first connection starts lives as long as the forwarder (its dial to the nsmgr, VPP event
// clients). internal/networkservice/xconnect's leak test checks the chain alone, in process.
func TestForwarderReturnsToBaselineAfterConnectionsClose(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	fwd := binaries.ForwarderVPP()
	d := startDomain(ctx, t, loadScenario("base", &fwd, 0, 0))
	node := d.Nodes[0]
	nse, err := d.StartEndpoint(ctx, node, "nse", service, loadEndpointCIDR, domain.WithPolicyRoutes(policyPrefix))
	require.NoError(t, err)

	warmUp := startLoad(ctx, t, d, loadClientPrefix+"w", 1, 1, refreshPlan{})
	require.NoError(t, warmUp.close())
	requireVPPClean(ctx, t, d, node)
	baseline := settledUsage(ctx, t, d, node)

	l := startLoad(ctx, t, d, loadClientPrefix, baselineConnections, baselineClients, refreshPlan{})
	loaded, err := d.ForwarderUsage(ctx, node)
	require.NoError(t, err)
	require.NoError(t, l.close())
	for _, c := range append(warmUp.clients, l.clients...) {
		requireEventuallyEmpty(t, c.Name+"'s pod", c.Pod.Netns)
	}
	requireVPPClean(ctx, t, d, node)
	requireNodeKernelClean(t, node)

	var now domain.Usage
	waitUntil(t, time.Now().Add(baselineSettle), 500*time.Millisecond, func() bool {
		now, err = d.ForwarderUsage(ctx, node)
		return err == nil && now.Goroutines <= baseline.Goroutines+baselineSlack && now.Descriptors <= baseline.Descriptors+baselineSlack
	}, func() string {
		return fmt.Sprintf("%s after %d connections closed, the forwarder holds %+v (error %v); before them %+v, with them %+v",
			baselineSettle, baselineConnections, now, err, baseline, loaded)
	})
	t.Logf("forwarder before %d connections: %+v; with them: %+v; after they closed: %+v", baselineConnections, baseline, loaded, now)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// settledUsage is the forwarder's usage once two readings a second apart agree.
func settledUsage(ctx context.Context, t *testing.T, d *domain.Domain, node *domain.Node) domain.Usage {
	t.Helper()
	var last, now domain.Usage
	var err error
	waitUntil(t, time.Now().Add(baselineSettle), time.Second, func() bool {
		last = now
		now, err = d.ForwarderUsage(ctx, node)
		return err == nil && now.Goroutines == last.Goroutines && now.Descriptors == last.Descriptors
	}, func() string {
		return fmt.Sprintf("the forwarder's goroutines and descriptors did not settle within %s: %+v, then %+v (error %v)", baselineSettle, last, now, err)
	})
	return now
}
