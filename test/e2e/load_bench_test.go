package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

const (
	// loadLifetime is every program's token lifetime in the load runs: the clients refresh
	// about a third of it after each grant, so every connection refreshes within the run.
	loadLifetime       = 60 * time.Second
	loadRequestTimeout = 15 * time.Second
	// loadDefaultSizes are the connection counts `make bench-forwarder` runs unless
	// E2E_LOAD_N names others (e.g. E2E_LOAD_N=10,100,500).
	loadDefaultSizes = "10,100"
	// loadHealTimeout bounds the wait for every connection to heal after the forwarder's restart.
	loadHealTimeout = time.Minute
)

// loadFigures are what one load run measured.
type loadFigures struct {
	forwarder  string
	n, clients int
	requestsPS float64
	// first and refresh are the forwarder's own time for the connections' first Requests and
	// for their refreshes.
	first, refresh latencies
	rssPerConn     float64
	goroutines     float64
	descriptors    float64
	// cpuPerRequest is the forwarder's processor time over its Requests, first and refresh,
	// from the first Request to the steady state.
	cpuPerRequest time.Duration
	healed        int
	heal          time.Duration
}

// BenchmarkForwarderLoad runs, for each size N (E2E_LOAD_N), N connections with a policy route
// each through one forwarder on the simulator, first this project's forwarder then the
// stock-equivalent one (test/stockforwarder): the clients connect all together, every connection
// refreshes once, the forwarder is SIGKILLed and restarted, every connection heals, and all
// close. It prints one row per forwarder and size, and the table of all at the end. Run with
// -benchtime 1x: a run is one load, never repeated.
func BenchmarkForwarderLoad(b *testing.B) {
	if skipReason != "" {
		b.Skip(skipReason)
	}
	sizes, err := loadSizes(os.Getenv("E2E_LOAD_N"))
	require.NoError(b, err)
	var rows []loadFigures
	for _, n := range sizes {
		for _, fwd := range []domain.Forwarder{binaries.ForwarderVPP(), binaries.Stock()} {
			b.Run(fmt.Sprintf("%s/N=%d", fwd.Name, n), func(b *testing.B) {
				for range b.N {
					f := runLoad(b, fwd, n)
					rows = append(rows, f)
					b.ReportMetric(f.requestsPS, "req/s")
					b.ReportMetric(ms(f.first.p50), "first-p50-ms")
					b.ReportMetric(ms(f.first.p99), "first-p99-ms")
					b.ReportMetric(ms(f.refresh.p50), "refresh-p50-ms")
					b.ReportMetric(ms(f.refresh.p99), "refresh-p99-ms")
					b.ReportMetric(f.rssPerConn/1024, "rss-KiB/conn")
					b.ReportMetric(f.goroutines, "goroutines/conn")
					b.ReportMetric(ms(f.cpuPerRequest), "cpu-ms/req")
					b.ReportMetric(f.heal.Seconds(), "heal-s")
				}
			})
		}
	}
	fmt.Print(loadTable(rows))
}

func runLoad(b *testing.B, fwd domain.Forwarder, n int) loadFigures {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	d := startDomain(ctx, b, loadScenario("load", &fwd, loadLifetime, loadRequestTimeout))
	node := d.Nodes[0]
	nse, err := d.StartEndpoint(ctx, node, "nse", service, loadEndpointCIDR, domain.WithPolicyRoutes(policyPrefix))
	require.NoError(b, err)
	idle, err := d.ForwarderUsage(ctx, node)
	require.NoError(b, err)

	b.ResetTimer()
	started := time.Now()
	profiled := profileLoad(ctx, b, d, fwd, n)
	l := startLoad(ctx, b, d, loadClientPrefix, n, loadMaxClients)
	f := loadFigures{forwarder: fwd.Name, n: n, clients: len(l.clients)}
	// Every connection refreshes once: the usage below is for connections in their steady state.
	_, refreshed, ok := l.waitAllGranted(b, node, started, 2, loadLifetime)
	require.True(b, ok, "%d of %d connections refreshed within %s", refreshed, n, loadLifetime)
	loaded, err := d.ForwarderUsage(ctx, node)
	require.NoError(b, err)
	loadedAt := time.Now()
	f.rssPerConn = float64(loaded.RSS-idle.RSS) / float64(n)
	f.goroutines = float64(loaded.Goroutines-idle.Goroutines) / float64(n)
	f.descriptors = float64(loaded.Descriptors-idle.Descriptors) / float64(n)

	calls, err := node.ReadCalls()
	require.NoError(b, err)
	f.requestsPS = firstRequestRate(calls, n)
	f.cpuPerRequest = (loaded.CPU - idle.CPU) / time.Duration(max(1, requestsBefore(calls, node.ForwarderName, loadedAt)))
	nseCalls, err := nse.ReadCalls()
	require.NoError(b, err)
	calls = append(calls, nseCalls...)
	seen := map[string]bool{}
	var first, refresh, refreshBefore, refreshAfter []time.Duration
	for _, r := range domain.ForwarderRequests(calls, node.ForwarderName) {
		if seen[r.Key] {
			refresh = append(refresh, r.Forwarder)
			refreshBefore = append(refreshBefore, r.BeforeNextHop)
			refreshAfter = append(refreshAfter, r.AfterNextHop)
		} else {
			first = append(first, r.Forwarder)
		}
		seen[r.Key] = true
	}
	f.first, f.refresh = latenciesOf(first), latenciesOf(refresh)
	b.Logf("%s, N=%d: refresh in the forwarder, p50 before / after the endpoint's part: %.1f / %.1f ms",
		fwd.Name, n, ms(percentile(refreshBefore, 50)), ms(percentile(refreshAfter, 50)))

	require.NoError(b, <-profiled)
	killed := time.Now()
	require.NoError(b, d.RestartForwarder(ctx, node))
	last, healed, ok := l.waitAllGranted(b, node, killed, 1, loadHealTimeout)
	f.healed = healed
	if ok {
		f.heal = last.Sub(killed)
	}
	b.StopTimer()
	b.Logf("%s, N=%d: %+v", fwd.Name, n, f)
	if !ok {
		// A connection that never healed cannot be closed through the forwarder: its client
		// goes as an OOM-killed one does, and the tear-down deletes its pod.
		for _, c := range l.clients {
			c.Kill()
		}
		return f
	}
	require.NoError(b, l.close(), "closing the load")
	return f
}

// profileLoad records the forwarder's CPU profile over the first loadLifetime/2 of the load, the
// first Requests and the refreshes, into $E2E_LOAD_CPU_PROFILE_DIR/<forwarder>-N<n>.pprof when
// that variable names a directory; the channel gives the recording's outcome.
func profileLoad(ctx context.Context, b *testing.B, d *domain.Domain, fwd domain.Forwarder, n int) <-chan error {
	done := make(chan error, 1)
	dir := os.Getenv("E2E_LOAD_CPU_PROFILE_DIR")
	if dir == "" {
		done <- nil
		return done
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-N%d.pprof", fwd.Name, n))
	go func() { done <- d.ForwarderCPUProfile(ctx, d.Nodes[0], loadLifetime/2, path) }()
	b.Logf("CPU profile of %s: %s", fwd.Name, path)
	return done
}

// requestsBefore counts the Requests the nsmgr sent the forwarder, granted or not, that began
// before t.
func requestsBefore(calls []domain.Call, forwarder string, t time.Time) int {
	count := 0
	for _, c := range calls {
		if c.Out && c.Method == "Request" && c.Peer == forwarder && c.Start.Before(t) {
			count++
		}
	}
	return count
}

func loadSizes(spec string) ([]int, error) {
	if spec == "" {
		spec = loadDefaultSizes
	}
	var sizes []int
	for _, field := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("E2E_LOAD_N=%q: want connection counts such as 10,100,500", spec)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// firstRequestRate is the load's first Requests per second, from the first of them reaching
// the nsmgr to the last granted.
func firstRequestRate(calls []domain.Call, n int) float64 {
	var begin, end time.Time
	granted := map[string]bool{}
	for _, c := range calls {
		if c.Out || c.Method != "Request" || !strings.HasPrefix(c.Peer, loadClientPrefix) || granted[c.Key] {
			continue
		}
		if begin.IsZero() || c.Start.Before(begin) {
			begin = c.Start
		}
		if c.OK {
			granted[c.Key] = true
			end = maxTime(end, c.End)
		}
	}
	return float64(n) / end.Sub(begin).Seconds()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// latencies are the median and 99th percentile of count durations.
type latencies struct {
	p50, p99 time.Duration
	count    int
}

func latenciesOf(values []time.Duration) latencies {
	return latencies{p50: percentile(values, 50), p99: percentile(values, 99), count: len(values)}
}

func percentile(values []time.Duration, p int) time.Duration {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadTable is the runs side by side, as the README carries them.
func loadTable(rows []loadFigures) string {
	var s strings.Builder
	s.WriteString("| N | forwarder | first Requests/s | first Request in the forwarder, p50 / p99 | refresh in the forwarder, p50 / p99 | RSS per connection | goroutines per connection | descriptors per connection | forwarder CPU per Request | all healed after SIGKILL + restart |\n")
	s.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		heal := r.heal.Round(100 * time.Millisecond).String()
		if r.heal == 0 {
			heal = fmt.Sprintf("not within %s (%d of %d)", loadHealTimeout, r.healed, r.n)
		}
		fmt.Fprintf(&s, "| %d | %s | %.1f | %.1f / %.1f ms (n=%d) | %.1f / %.1f ms (n=%d) | %.1f KiB | %.1f | %.2f | %.1f ms | %s |\n",
			r.n, r.forwarder, r.requestsPS, ms(r.first.p50), ms(r.first.p99), r.first.count, ms(r.refresh.p50), ms(r.refresh.p99), r.refresh.count,
			r.rssPerConn/1024, r.goroutines, r.descriptors, ms(r.cpuPerRequest), heal)
	}
	return s.String()
}
