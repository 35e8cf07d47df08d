package compare

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Summary is every scenario's results per forwarder over repeated runs, and the verdict on the
// forwarder under test against the reference one.
type Summary struct {
	// Reference is the forwarder compared against (stock); Subject the one under test.
	Reference, Subject string
	Runs               int
	Scenarios          []string
	// cells[scenario][forwarder] are that pair's results, one per run that reported.
	cells map[string]map[string][]Result
}

// Summarize groups results by scenario (in the order given, then any other in first-seen
// order) and forwarder; runs is how many results each pair should have.
func Summarize(results []Result, reference, subject string, runs int, scenarios []string) *Summary {
	s := &Summary{Reference: reference, Subject: subject, Runs: runs, cells: map[string]map[string][]Result{}}
	known := map[string]bool{}
	for _, name := range scenarios {
		known[name] = true
		s.Scenarios = append(s.Scenarios, name)
	}
	for _, r := range results {
		if !known[r.Scenario] {
			known[r.Scenario] = true
			s.Scenarios = append(s.Scenarios, r.Scenario)
		}
		if s.cells[r.Scenario] == nil {
			s.cells[r.Scenario] = map[string][]Result{}
		}
		s.cells[r.Scenario][r.Forwarder] = append(s.cells[r.Scenario][r.Forwarder], r)
	}
	return s
}

// Failures are the reasons the subject does worse than the reference: a run of a scenario that
// failed or never reported, a recovery slower beyond noise, first Requests slower beyond noise.
func (s *Summary) Failures() []string {
	var failures []string
	for _, scenario := range s.Scenarios {
		results := s.cells[scenario][s.Subject]
		if missing := s.Runs - len(results); missing > 0 {
			failures = append(failures, fmt.Sprintf("%s: %s reported %d of %d runs", scenario, s.Subject, len(results), s.Runs))
		}
		for _, r := range results {
			if !r.Passed {
				failures = append(failures, fmt.Sprintf("%s: %s failed at %q", scenario, s.Subject, r.FailedAt))
			}
		}
		ours, theirs := recoveries(results), recoveries(s.cells[scenario][s.Reference])
		if SlowerBeyondNoise(ours, theirs) {
			failures = append(failures, fmt.Sprintf("%s: %s recovers in %s, %s in %s", scenario, s.Subject, spread(ours), s.Reference, spread(theirs)))
		}
	}
	ours, theirs := s.latencies(s.Subject), s.latencies(s.Reference)
	if SlowerBeyondNoise(ours, theirs) {
		failures = append(failures, fmt.Sprintf("first Request: %s takes %s, %s %s", s.Subject, spread(ours), s.Reference, spread(theirs)))
	}
	return failures
}

// noiseFloor is the relative difference of medians below which nothing counts as slower: with
// a handful of runs on a shared machine the spread itself is poorly known.
const noiseFloor = 0.05

// SlowerBeyondNoise says whether a is slower than b by more than their spread: a's median more
// than 5% above b's, and a's lower quartile above b's upper quartile, or with fewer than four
// samples on a side, a's fastest slower than b's slowest. Nothing to compare is not slower.
func SlowerBeyondNoise(a, b []time.Duration) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if float64(quantile(a, 0.5)) <= float64(quantile(b, 0.5))*(1+noiseFloor) {
		return false
	}
	if len(a) < 4 || len(b) < 4 {
		return quantile(a, 0) > quantile(b, 1)
	}
	return quantile(a, 0.25) > quantile(b, 0.75)
}

// Markdown renders the table: one row per scenario, then the first Request latency over all.
func (s *Summary) Markdown() string {
	var b strings.Builder
	ref, sub := s.Reference, s.Subject
	fmt.Fprintf(&b, "| scenario | %s | %s | heal or clean-up time, %s / %s | leaked objects, %s / %s | first Request latency, %s / %s |\n", ref, sub, ref, sub, ref, sub, ref, sub)
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, scenario := range s.Scenarios {
		a, z := s.cells[scenario][ref], s.cells[scenario][sub]
		fmt.Fprintf(&b, "| %s | %s | %s | %s / %s | %s / %s | %s / %s |\n", scenario,
			s.outcome(a), s.outcome(z),
			recoveryCell(a), recoveryCell(z),
			leakCell(a), leakCell(z),
			spread(latencies(a)), spread(latencies(z)))
	}
	fmt.Fprintf(&b, "| all scenarios, first Request | | | | | %s / %s |\n", spread(s.latencies(ref)), spread(s.latencies(sub)))
	return b.String()
}

// Leftovers lists, per scenario and forwarder, the distinct objects runs left behind.
func (s *Summary) Leftovers() string {
	var b strings.Builder
	for _, scenario := range s.Scenarios {
		for _, fwd := range []string{s.Reference, s.Subject} {
			seen := map[string]bool{}
			var objects []string
			for _, r := range s.cells[scenario][fwd] {
				for _, o := range r.Leaked {
					if !seen[o] {
						seen[o] = true
						objects = append(objects, o)
					}
				}
			}
			if len(objects) > 0 {
				fmt.Fprintf(&b, "%s, %s left:\n  %s\n", scenario, fwd, strings.Join(objects, "\n  "))
			}
		}
	}
	return b.String()
}

func (s *Summary) outcome(results []Result) string {
	passed := 0
	failedAt := map[string]int{}
	for _, r := range results {
		if r.Passed {
			passed++
		} else {
			failedAt[r.FailedAt]++
		}
	}
	switch {
	case len(results) == 0:
		return "no result"
	case passed == len(results):
		return fmt.Sprintf("passes %d/%d", passed, s.Runs)
	}
	steps := make([]string, 0, len(failedAt))
	for step, n := range failedAt {
		steps = append(steps, fmt.Sprintf("%s (%d)", step, n))
	}
	sort.Strings(steps)
	return fmt.Sprintf("**fails %d/%d** at %s", len(results)-passed, s.Runs, strings.Join(steps, ", "))
}

func recoveryCell(results []Result) string {
	var heals []int
	for _, r := range results {
		if r.Heals >= 0 {
			heals = append(heals, r.Heals)
		}
	}
	if len(heals) > 0 {
		return fmt.Sprintf("heals: %s", intRange(heals))
	}
	return spread(recoveries(results))
}

func leakCell(results []Result) string {
	counts := make([]int, 0, len(results))
	for _, r := range results {
		counts = append(counts, len(r.Leaked))
	}
	return intRange(counts)
}

func recoveries(results []Result) []time.Duration {
	var out []time.Duration
	for _, r := range results {
		if r.Recovery > 0 {
			out = append(out, r.Recovery)
		}
	}
	return out
}

func latencies(results []Result) []time.Duration {
	var out []time.Duration
	for _, r := range results {
		out = append(out, r.RequestLatencies...)
	}
	return out
}

func (s *Summary) latencies(forwarder string) []time.Duration {
	var out []time.Duration
	for _, scenario := range s.Scenarios {
		out = append(out, latencies(s.cells[scenario][forwarder])...)
	}
	return out
}

// spread renders a median and its range: the interquartile range from four samples on, else
// the minimum and maximum.
func spread(samples []time.Duration) string {
	switch len(samples) {
	case 0:
		return "–"
	case 1:
		return roundDuration(samples[0])
	}
	lo, hi := quantile(samples, 0), quantile(samples, 1)
	if len(samples) >= 4 {
		lo, hi = quantile(samples, 0.25), quantile(samples, 0.75)
	}
	return fmt.Sprintf("%s (%s–%s, n=%d)", roundDuration(quantile(samples, 0.5)), roundDuration(lo), roundDuration(hi), len(samples))
}

func roundDuration(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	if d >= time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// quantile interpolates linearly between the closest ranks.
func quantile(samples []time.Duration, q float64) time.Duration {
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	pos := q * float64(len(sorted)-1)
	low := int(pos)
	if low+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(low)
	return sorted[low] + time.Duration(frac*float64(sorted[low+1]-sorted[low]))
}

func intRange(values []int) string {
	if len(values) == 0 {
		return "–"
	}
	sorted := append([]int(nil), values...)
	sort.Ints(sorted)
	if sorted[0] == sorted[len(sorted)-1] {
		return fmt.Sprint(sorted[0])
	}
	return fmt.Sprintf("%d–%d", sorted[0], sorted[len(sorted)-1])
}
