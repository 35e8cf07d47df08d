package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
)

// TestEverySetRowNamesAnExistingTestOnce: a row whose test was renamed away would only show up
// as "Not run" at the end of an hour-long comparison.
func TestEverySetRowNamesAnExistingTestOnce(t *testing.T) {
	for name, s := range sets {
		chosen, absent, err := selected(filepath.Join("..", ".."), s.scenarios, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range absent {
			t.Errorf("set %s: row %q names %s, which test/e2e does not have", name, a.name, a.topLevel())
		}
		rows, tests := map[string]bool{}, map[string]bool{}
		for _, c := range chosen {
			if rows[c.name] || tests[c.test] {
				t.Errorf("set %s: row %q or its test %s is listed twice", name, c.name, c.test)
			}
			rows[c.name], tests[c.test] = true, true
		}
	}
}

func TestResultsGoUnderTheRowOfTheirTest(t *testing.T) {
	chosen := []scenario{{"heal/remote-nse-death, real VPP", "TestUpstreamHealExamples/remote-nse-death/vpp"}}
	rows, stray := underRowNames([]compare.Result{
		{Scenario: "heal/remote-nse-death", Test: "TestUpstreamHealExamples/remote-nse-death/vpp", Forwarder: "stock"},
		{Scenario: "heal/spire-upgrade", Test: "TestUpstreamHealExamples/spire-upgrade/vpp", Forwarder: "stock"},
	}, chosen)
	if len(rows) != 1 || rows[0].Scenario != chosen[0].name {
		t.Errorf("rows: %+v, want the first result under %q", rows, chosen[0].name)
	}
	if len(stray) != 1 || stray[0].Test != "TestUpstreamHealExamples/spire-upgrade/vpp" {
		t.Errorf("stray: %+v, want the unlisted subtest's result", stray)
	}
}

func TestProgressEchoesOnlyTheChosenScenariosVerdicts(t *testing.T) {
	var got bytes.Buffer
	p := &progressLines{out: &got, tests: map[string]bool{"TestA/vpp": true}, prefix: "stock: "}
	for _, chunk := range []string{"=== RUN TestA/vpp\n    --- PA", "SS: TestA/vpp (1.00s)\n", "--- PASS: TestA (1.00s)\n"} {
		if _, err := p.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if want := "stock: --- PASS: TestA/vpp (1.00s)\n"; got.String() != want {
		t.Errorf("echoed %q, want %q", got.String(), want)
	}
	if strings.Contains(got.String(), "=== RUN") {
		t.Error("echoed a RUN line")
	}
}

// TestSuiteLogsStayBesideKeptResults: the temporary directory goes when the comparison ends, and
// with it the only log of a failure that will not come back on the next run.
func TestSuiteLogsStayBesideKeptResults(t *testing.T) {
	for _, c := range []struct{ kept, want string }{
		{"", "/tmp/work/run2-stock.log"},
		{"/tmp/lead/upstream.jsonl", "/tmp/lead/upstream-run2-stock.log"},
		{"results", "results-run2-stock.log"},
	} {
		if got := suiteLog("/tmp/work", c.kept, 2, "stock"); got != c.want {
			t.Errorf("-results %q: suite log %s, want %s", c.kept, got, c.want)
		}
	}
}
