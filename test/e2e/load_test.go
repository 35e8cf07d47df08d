package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// A load is many connections through one forwarder from few client processes: each e2e-nsc
// holds many connections (one sdk client chain, one SVID, one gRPC connection to the
// nsmgr), each connection its own interface in that client's pod, so a connection costs the
// harness one interface and one Request chain, not a process.
const (
	// loadClientPrefix starts the name of every load client (and their path segments).
	loadClientPrefix = "load"
	// loadEndpointCIDR has room for 500 point-to-point connections.
	loadEndpointCIDR = "172.20.0.0/16"
	// loadMaxClients bounds the client processes, and so how many Requests are in flight.
	loadMaxClients = 10
)

// loadScenario is one node over taps, with the nsmgr's and endpoint's call logs for the forwarder's
// own Request latency and the forwarder's pprof for its goroutines; the harness programs log at
// INFO, which is what they cost at this scale.
func loadScenario(tag string, fwd *domain.Forwarder, lifetime, requestTimeout time.Duration) scenario {
	return scenario{tag: tag, kernelType: "tap", linkType: "tuntap", nodes: 1, forwarder: fwd,
		tokenLifetime: lifetime, requestTimeout: requestTimeout,
		forwarderEnv: domain.PprofEnv(), callLogs: true, logLevel: "INFO"}
}

// refreshPlan paces a load's refreshes: the n connections refresh once each, spread evenly over
// period (n/period a second), each client starting after its last first Request plus its share
// of the period. The zero plan leaves refreshing to the sdk's refresh client, which refreshes
// each connection a fifth of its token's lifetime after it was granted: at the rate the first
// Requests were granted, which is as fast as the domain serves them.
type refreshPlan struct {
	after, period time.Duration
}

// env is what client p of processes, holding connections p, p+processes, ..., is told.
func (r refreshPlan) env(p, processes, n int) []string {
	if r.period == 0 {
		return nil
	}
	after := r.after + r.period*time.Duration(p)/time.Duration(n)
	spacing := r.period * time.Duration(processes) / time.Duration(n)
	return []string{"NSM_REFRESH_AFTER=" + after.String(), "NSM_REFRESH_SPACING=" + spacing.String()}
}

// load is n connections from clients started together.
type load struct {
	clients []*domain.Client
	n       int
}

// startLoad starts the clients of n connections (that many processes at most, the
// connections spread evenly) at once, and waits until every connection is granted. The clients
// are named name0, name1, ... (name starts with loadClientPrefix); they refresh as refresh says.
func startLoad(ctx context.Context, tb testing.TB, d *domain.Domain, name string, n, processes int, refresh refreshPlan) *load {
	tb.Helper()
	processes = min(n, processes)
	l := &load{n: n}
	for p := range processes {
		var services []string
		for i := p; i < n; i += processes {
			services = append(services, fmt.Sprintf("kernel://%s/nsm-%d", service, i))
		}
		c, err := d.StartClientWithEnv(d.Nodes[0], fmt.Sprintf("%s%d", name, p), refresh.env(p, processes, n), services...)
		require.NoError(tb, err)
		l.clients = append(l.clients, c)
	}
	for _, c := range l.clients {
		require.NoError(tb, c.WaitGranted(ctx), "%s was not granted its connections:\n%s", c.Name, c.Proc.LogTail(20))
	}
	return l
}

// close makes every client close its connections, all at once, and requires every Close to
// succeed.
func (l *load) close() error {
	errs := make(chan error, len(l.clients))
	for _, c := range l.clients {
		go func() {
			if err := c.Close(); err != nil {
				errs <- fmt.Errorf("%s: %w\n%s", c.Name, err, c.Proc.LogTail(10))
				return
			}
			errs <- nil
		}()
	}
	var all []error
	for range l.clients {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// grants are, per load connection, when the nsmgr granted its Requests to the client.
func (l *load) grants(tb testing.TB, node *domain.Node) map[string][]time.Time {
	tb.Helper()
	calls, err := node.ReadCalls()
	require.NoError(tb, err)
	return domain.ClientGrants(calls, loadClientPrefix)
}

// waitAllGranted waits until every one of the load's connections has been granted a Request
// that ended after since, and returns when the last of them was; false when time ran out first.
func (l *load) waitAllGranted(tb testing.TB, node *domain.Node, since time.Time, atLeast int, timeout time.Duration) (time.Time, int, bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		last, done := time.Time{}, 0
		for _, g := range l.grants(tb, node) {
			count := 0
			for _, at := range g {
				if at.After(since) {
					count++
					if count == atLeast && at.After(last) {
						last = at
					}
				}
			}
			if count >= atLeast {
				done++
			}
		}
		if done == l.n {
			return last, done, true
		}
		if time.Now().After(deadline) {
			return last, done, false
		}
		time.Sleep(250 * time.Millisecond)
	}
}
