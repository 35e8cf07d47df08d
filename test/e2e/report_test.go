package e2e_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// leftoverSettle is how long the leftovers of a run wait for the data plane to go idle once
// every client has closed.
const leftoverSettle = 10 * time.Second

// report records one scenario run for `make compare` when E2E_RESULTS names a file: whether it
// passed, at which step it failed, how long its recovery took, what it left behind and the
// clients' first Request latencies.
type report struct {
	result compare.Result
}

// reports holds the report of every running test whose scenario names one (scenario.report).
var reports sync.Map // *testing.T → *report

// reportOf is t's report, or one that records nothing when t's scenario names none.
func reportOf(t *testing.T) *report {
	if r, ok := reports.Load(t); ok {
		return r.(*report)
	}
	return &report{}
}

// reportScenario starts the report of the scenario running on d; startDomain calls it right
// after the domain is up, so that its clean-up runs before the domain's tear-down, while the
// leftovers can still be seen. A run on real VPP is its own row.
func reportScenario(t *testing.T, d *domain.Domain, scenario string) {
	if d.RealVPP() {
		scenario += ", real VPP"
	}
	r := &report{result: compare.Result{Scenario: scenario, Test: t.Name(), Forwarder: d.Forwarder().Name, FailedAt: "connect", Heals: -1}}
	reports.Store(t, r)
	t.Cleanup(func() { reports.Delete(t) })
	path := os.Getenv(compare.ResultsVariable)
	if path == "" {
		return
	}
	t.Cleanup(func() {
		r.result.Passed = !t.Failed()
		if r.result.Passed {
			r.result.FailedAt = ""
		}
		for _, c := range d.Clients() {
			latencies, err := c.RequestLatencies()
			if err != nil {
				t.Errorf("request latencies of %s: %v", c.Name, err)
			}
			r.result.RequestLatencies = append(r.result.RequestLatencies, latencies...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := d.Leftovers(ctx, leftoverSettle)
		if err != nil {
			left = append(left, "(could not look: "+err.Error()+")")
		}
		r.result.Leaked = left
		if err = compare.Append(path, r.result); err != nil {
			t.Errorf("recording the result in %s: %v", path, err)
		}
	})
}

// step names what the scenario checks next; a failure is reported at the last step named.
func (r *report) step(name string) { r.result.FailedAt = name }

// recovered records how long the scenario's recovery took.
func (r *report) recovered(took time.Duration) { r.result.Recovery = took }

// heals records how many heals the client went through.
func (r *report) heals(n int) { r.result.Heals = n }
