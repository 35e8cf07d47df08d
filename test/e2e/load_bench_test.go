package e2e_test

import (
	"context"
	"errors"
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
	// loadLifetime is every program's token lifetime in the load runs: long enough for every
	// connection to refresh within the run (paced, or the sdk's a fifth of it after each grant).
	loadLifetime = 60 * time.Second
	// loadRefreshAfter and loadRefreshPeriod pace the refreshes (E2E_LOAD_REFRESH=paced, the
	// default): each client starts about when the sdk's refresh would, clear of the other
	// clients' first Requests, and the N connections refresh over loadRefreshPeriod, N/20 s a
	// second (5/s at N=100, a third of what the domain serves on this machine).
	loadRefreshAfter   = loadLifetime / 5
	loadRefreshPeriod  = 20 * time.Second
	loadRequestTimeout = 15 * time.Second
	// loadDefaultSizes are the connection counts `make bench-forwarder` runs unless
	// E2E_LOAD_N names others (e.g. E2E_LOAD_N=10,100,500).
	loadDefaultSizes = "10,100"
	// loadHealTimeout bounds the wait for every connection to heal after the forwarder's restart.
	loadHealTimeout = time.Minute
	// loadSettle is the pause before each load, for the machine to finish with the one before.
	loadSettle = 10 * time.Second
	// loadTraceTime is how long E2E_LOAD_TRACE_DIR's execution trace records: a few megabytes at
	// N=100.
	loadTraceTime = 6 * time.Second
	// loadPacedTraceDelay is when the trace starts with paced refreshes: at N=100 the first
	// Requests take about 7 s, and the refreshes start loadRefreshAfter later.
	loadPacedTraceDelay = 20 * time.Second
)

// loadFigures are what one load run measured.
type loadFigures struct {
	forwarder         string
	round, n, clients int
	requestsPS        float64
	// first and refresh are the forwarder's own time for the connections' first Requests and
	// for their refreshes.
	first, refresh latencies
	// firstSamples and refreshSamples are the durations behind first and refresh, for pooling
	// rounds.
	firstSamples, refreshSamples []time.Duration
	rssPerConn                   float64
	goroutines                   float64
	descriptors                  float64
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
// -benchtime 1x: a run is one load, never repeated. E2E_LOAD_ROUNDS=k runs the whole series k
// times, the two forwarders taking turns, and ends with the rounds' latencies pooled: ten
// connections give ten samples a round, too few to tell two forwarders apart in one.
func BenchmarkForwarderLoad(b *testing.B) {
	if skipReason != "" {
		b.Skip(skipReason)
	}
	sizes, err := loadSizes(os.Getenv("E2E_LOAD_N"))
	require.NoError(b, err)
	rounds, err := loadRounds(os.Getenv("E2E_LOAD_ROUNDS"))
	require.NoError(b, err)
	refresh, err := loadRefresh(os.Getenv("E2E_LOAD_REFRESH"))
	require.NoError(b, err)
	forwarders := []domain.Forwarder{binaries.ForwarderVPP(), binaries.Stock()}
	var rows []loadFigures
	for round := 1; round <= rounds; round++ {
		for _, n := range sizes {
			for _, fwd := range turnOrder(forwarders, round) {
				name := fmt.Sprintf("%s/N=%d", fwd.Name, n)
				if rounds > 1 {
					name += fmt.Sprintf("/round=%d", round)
				}
				b.Run(name, func(b *testing.B) {
					for range b.N {
						f := runLoad(b, fwd, n, round, refresh)
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
	}
	fmt.Println(refreshMode(refresh))
	fmt.Print(loadTable(rows))
	if rounds > 1 {
		fmt.Print(pooledTable(rows, len(forwarders)))
	}
}

// turnOrder is the forwarders in the order a round runs them: reversed every other round. In a
// fixed order this forwarder's N=10 load always came right after stock's N=100 one (whose 100
// clients are killed when they do not heal, and whose pods the kernel then cleans up) and stock's
// N=10 load after this forwarder's: whatever a load leaves the machine doing weighed on one
// forwarder only.
func turnOrder(forwarders []domain.Forwarder, round int) []domain.Forwarder {
	if round%2 == 1 {
		return forwarders
	}
	reversed := slices.Clone(forwarders)
	slices.Reverse(reversed)
	return reversed
}

func runLoad(b *testing.B, fwd domain.Forwarder, n, round int, plan refreshPlan) loadFigures {
	// The previous load's pods and interfaces are gone from the harness, not yet from the
	// kernel's clean-up.
	time.Sleep(loadSettle)
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
	profiled := profileLoad(ctx, b, d, fwd, n, plan)
	l := startLoad(ctx, b, d, loadClientPrefix, n, loadMaxClients, plan)
	f := loadFigures{forwarder: fwd.Name, round: round, n: n, clients: len(l.clients)}
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
	f.firstSamples, f.refreshSamples = first, refresh
	b.Logf("%s, N=%d: refresh in the forwarder, p50 before / after the endpoint's part: %.1f / %.1f ms; refreshes came at %.1f/s, first Requests were granted at %.1f/s",
		fwd.Name, n, ms(percentile(refreshBefore, 50)), ms(percentile(refreshAfter, 50)), refreshArrivalRate(calls, node.ForwarderName), f.requestsPS)

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

// profileLoad records, when E2E_LOAD_CPU_PROFILE_DIR names a directory, the forwarder's CPU
// profile over the first loadLifetime/2 of the load (the first Requests and the refreshes) into
// <dir>/<forwarder>-N<n>.pprof, and, when E2E_LOAD_TRACE_DIR names one, its execution trace over
// loadTraceTime from plan.traceDelay() in (among the refreshes) into <dir>/<forwarder>-N<n>.trace.
// The channel gives the recordings' outcome once both are done.
func profileLoad(ctx context.Context, b *testing.B, d *domain.Domain, fwd domain.Forwarder, n int, plan refreshPlan) <-chan error {
	var recordings []<-chan error
	record := func(env string, recording domain.Recording, delay, duration time.Duration, suffix string) {
		dir := os.Getenv(env)
		if dir == "" {
			return
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-N%d.%s", fwd.Name, n, suffix))
		b.Logf("%s of %s: %s", recording, fwd.Name, path)
		recorded := make(chan error, 1)
		recordings = append(recordings, recorded)
		go func() {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			recorded <- d.RecordForwarder(ctx, d.Nodes[0], recording, duration, path)
		}()
	}
	record("E2E_LOAD_CPU_PROFILE_DIR", domain.CPUProfile, 0, loadLifetime/2, "pprof")
	record("E2E_LOAD_TRACE_DIR", domain.ExecutionTrace, plan.traceDelay(), loadTraceTime, "trace")
	done := make(chan error, 1)
	go func() {
		var errs []error
		for _, recorded := range recordings {
			errs = append(errs, <-recorded)
		}
		done <- errors.Join(errs...)
	}()
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

// loadRefresh reads E2E_LOAD_REFRESH: "paced" (or nothing) spreads the refreshes over
// loadRefreshPeriod; "sdk" leaves them to the sdk's refresh client, which refreshes the
// connections at the rate they were first granted, with the domain saturated.
func loadRefresh(spec string) (refreshPlan, error) {
	switch strings.TrimSpace(spec) {
	case "", "paced":
		return refreshPlan{after: loadRefreshAfter, period: loadRefreshPeriod}, nil
	case "sdk":
		return refreshPlan{}, nil
	}
	return refreshPlan{}, fmt.Errorf("E2E_LOAD_REFRESH=%q: want paced or sdk", spec)
}

// traceDelay is how far into a load its refreshes are under way at N=100: the sdk's come from
// about a fifth of the token's lifetime in, the paced ones from loadPacedTraceDelay.
func (r refreshPlan) traceDelay() time.Duration {
	if r.period == 0 {
		return loadLifetime / 5
	}
	return loadPacedTraceDelay
}

// refreshMode says, above the table, how its refreshes came.
func refreshMode(r refreshPlan) string {
	if r.period == 0 {
		return "Refreshes: the sdk's, each connection a fifth of its token's lifetime after its grant (E2E_LOAD_REFRESH=sdk)."
	}
	return fmt.Sprintf("Refreshes: paced, N connections over %s (N/%s a second), from %s after each client's first Requests (E2E_LOAD_REFRESH=paced).",
		r.period, r.period, r.after)
}

func loadRounds(spec string) (int, error) {
	if spec == "" {
		return 1, nil
	}
	rounds, err := strconv.Atoi(strings.TrimSpace(spec))
	if err != nil || rounds < 1 {
		return 0, fmt.Errorf("E2E_LOAD_ROUNDS=%q: want a number of rounds such as 5", spec)
	}
	return rounds, nil
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

// refreshArrivalRate is how many refreshes a second the nsmgr sent the forwarder, from the first
// to the last (a connection's second Request is its refresh). Next to firstRequestRate it says how
// close the refreshes came to what the domain serves.
func refreshArrivalRate(calls []domain.Call, forwarder string) float64 {
	requests := map[string]int{}
	var begin, end time.Time
	count := 0
	for _, c := range calls {
		if !c.Out || c.Method != "Request" || c.Peer != forwarder {
			continue
		}
		if requests[c.Key]++; requests[c.Key] != 2 {
			continue
		}
		count++
		if begin.IsZero() || c.Start.Before(begin) {
			begin = c.Start
		}
		end = maxTime(end, c.Start)
	}
	if count < 2 {
		return 0
	}
	return float64(count-1) / end.Sub(begin).Seconds()
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

// loadTable is the runs side by side, as docs/load.md carries them.
func loadTable(rows []loadFigures) string {
	var s strings.Builder
	s.WriteString("| round | N | forwarder | first Requests/s | first Request in the forwarder, p50 / p99 | refresh in the forwarder, p50 / p99 | RSS per connection | goroutines per connection | descriptors per connection | forwarder CPU per Request | all healed after SIGKILL + restart |\n")
	s.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		heal := r.heal.Round(100 * time.Millisecond).String()
		if r.heal == 0 {
			heal = fmt.Sprintf("not within %s (%d of %d)", loadHealTimeout, r.healed, r.n)
		}
		fmt.Fprintf(&s, "| %d | %d | %s | %.1f | %.1f / %.1f ms (n=%d) | %.1f / %.1f ms (n=%d) | %.1f KiB | %.1f | %.2f | %.1f ms | %s |\n",
			r.round, r.n, r.forwarder, r.requestsPS, ms(r.first.p50), ms(r.first.p99), r.first.count, ms(r.refresh.p50), ms(r.refresh.p99), r.refresh.count,
			r.rssPerConn/1024, r.goroutines, r.descriptors, ms(r.cpuPerRequest), heal)
	}
	return s.String()
}
