package compare_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
)

func ms(values ...int) []time.Duration {
	out := make([]time.Duration, 0, len(values))
	for _, v := range values {
		out = append(out, time.Duration(v)*time.Millisecond)
	}
	return out
}

func TestSlowerBeyondNoise(t *testing.T) {
	// Few samples: only disjoint ranges count.
	require.True(t, compare.SlowerBeyondNoise(ms(30, 31, 29), ms(20, 21, 19)))
	require.False(t, compare.SlowerBeyondNoise(ms(30, 19, 29), ms(20, 21, 19)))
	require.False(t, compare.SlowerBeyondNoise(ms(20, 21, 19), ms(30, 31, 29)), "faster is not slower")
	// Four samples or more: quartiles, so one outlier does not hide a shift.
	require.True(t, compare.SlowerBeyondNoise(ms(290, 285, 295, 288, 100), ms(260, 265, 262, 270, 900)))
	require.False(t, compare.SlowerBeyondNoise(ms(262, 270, 265, 268), ms(260, 265, 262, 270)))
	require.False(t, compare.SlowerBeyondNoise(nil, ms(1)), "nothing to compare")
	// Disjoint but within the 5% floor: single runs on a shared machine differ that much.
	require.False(t, compare.SlowerBeyondNoise(ms(18800), ms(18200)))
	require.True(t, compare.SlowerBeyondNoise(ms(28800), ms(19700)))
}

func TestFailuresNameEveryShortfallOfTheSubject(t *testing.T) {
	results := []compare.Result{
		{Scenario: "restart", Forwarder: "stock", Passed: false, FailedAt: "heal", Heals: -1},
		{Scenario: "restart", Forwarder: "ours", Passed: true, Recovery: 12 * time.Second, Heals: -1},
		{Scenario: "expiry", Forwarder: "stock", Passed: true, Recovery: 20 * time.Second, Heals: -1, RequestLatencies: ms(260)},
		{Scenario: "expiry", Forwarder: "ours", Passed: true, Recovery: 29 * time.Second, Heals: -1, RequestLatencies: ms(280)},
		{Scenario: "idle", Forwarder: "ours", Passed: false, FailedAt: "no heal", Heals: 2},
	}
	s := compare.Summarize(results, "stock", "ours", 1, []string{"restart", "expiry", "idle", "never ran"})
	failures := s.Failures()
	require.Len(t, failures, 4, "%q", failures)
	joined := strings.Join(failures, "\n")
	require.Contains(t, joined, `idle: ours failed at "no heal"`)
	require.Contains(t, joined, "expiry: ours recovers in 29s, stock in 20s")
	require.Contains(t, joined, "never ran: ours reported 0 of 1 runs")
	require.Contains(t, joined, "first Request: ours takes 280ms, stock 260ms")

	table := s.Markdown()
	require.Contains(t, table, "| restart | **fails 1/1** at heal (1) | passes 1/1 | – / 12s | 0 / 0 |")
	require.Contains(t, table, "| idle | no result | **fails 1/1** at no heal (1) | – / heals: 2 |")
	require.Contains(t, table, "| all scenarios, first Request | | | | | 260ms / 280ms |")
}

func TestSpreadIsMedianWithRangeOrQuartiles(t *testing.T) {
	results := []compare.Result{
		{Scenario: "a", Forwarder: "ours", Passed: true, Heals: -1, RequestLatencies: ms(100, 200, 300)},
		{Scenario: "a", Forwarder: "stock", Passed: true, Heals: -1, RequestLatencies: ms(100, 200, 300, 400, 500)},
	}
	table := compare.Summarize(results, "stock", "ours", 1, nil).Markdown()
	require.Contains(t, table, "| 300ms (200ms–400ms, n=5) / 200ms (100ms–300ms, n=3) |")
}

func TestResultsRoundTripThroughTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	want := []compare.Result{
		{Scenario: "a", Forwarder: "ours", Passed: true, Recovery: time.Second, Heals: -1, Leaked: []string{"x"}, RequestLatencies: ms(5)},
		{Scenario: "b", Forwarder: "stock", FailedAt: "heal", Heals: 3},
	}
	for _, r := range want {
		require.NoError(t, compare.Append(path, r))
	}
	got, err := compare.Read(path)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestSkipReasonReadsTheVerboseLog(t *testing.T) {
	log := `=== RUN   TestX
=== RUN   TestX/vppsim
    x_test.go:4: hello
=== RUN   TestX/vpp
    x_test.go:5: no real VPP: looked at a, b
--- PASS: TestX (0.00s)
    --- PASS: TestX/vppsim (0.00s)
    --- SKIP: TestX/vpp (0.00s)
PASS
`
	reason, skipped := compare.SkipReason(log, "TestX/vpp")
	require.True(t, skipped)
	require.Equal(t, "no real VPP: looked at a, b", reason)
	_, skipped = compare.SkipReason(log, "TestX/vppsim")
	require.False(t, skipped, "a passing subtest did not skip")
	_, skipped = compare.SkipReason(log, "TestX")
	require.False(t, skipped)
}

// A test that recorded a pass and then failed (its tear-down check) counts as failed: its last
// result only, the other results untouched.
func TestFailAfterwardTurnsTheLastPassIntoAFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	for _, r := range []compare.Result{
		{Scenario: "a", Test: "TestA/vpp", Forwarder: "forwarder-vpp", Passed: true, Heals: -1},
		{Scenario: "a", Test: "TestA/vpp", Forwarder: "stock", Passed: true, Heals: -1},
		{Scenario: "a", Test: "TestA/vpp", Forwarder: "forwarder-vpp", Passed: true, Heals: -1},
		{Scenario: "b", Test: "TestB/vpp", Forwarder: "forwarder-vpp", Passed: true, Heals: -1},
	} {
		require.NoError(t, compare.Append(path, r))
	}

	require.NoError(t, compare.FailAfterward(path, "TestA/vpp", "forwarder-vpp", "tear-down"))

	results, err := compare.Read(path)
	require.NoError(t, err)
	require.Len(t, results, 4)
	require.True(t, results[0].Passed, "an earlier run's result changed")
	require.True(t, results[1].Passed, "the other forwarder's result changed")
	require.False(t, results[2].Passed)
	require.Equal(t, "tear-down", results[2].FailedAt)
	require.True(t, results[3].Passed, "another test's result changed")

	require.NoError(t, compare.FailAfterward(path, "TestA/vpp", "forwarder-vpp", "again"))
	results, err = compare.Read(path)
	require.NoError(t, err)
	require.Equal(t, "tear-down", results[2].FailedAt, "a failed result was marked again")
	require.True(t, results[0].Passed, "an earlier run's pass was taken for the failed one")
}
