// Command e2e-compare runs a set of end-to-end scenarios (the field reports', or NSM's example
// suite's) against the stock-equivalent forwarder (test/stockforwarder) and against
// forwarder-vpp, several times each, alternating, and prints one table: each scenario's outcome
// on both, heal or clean-up time, leaked objects and first Request latency, with medians and
// spreads. It exits non-zero when forwarder-vpp fails a run of a scenario or is slower than
// stock beyond the spread of the runs (`make compare`, `make upstream-compare`; see
// docs/e2e.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
	"github.com/nsmfwd/forwarder-vpp/test/figures"
)

const (
	reference = "stock"
	subject   = "forwarder-vpp"
)

// set is a list of scenarios compared together, and the document its table goes into.
type set struct {
	scenarios  []scenario
	doc, title string
	intro      string
	// env is what the set's tests need set beyond the forwarder and the results file.
	env []string
}

var sets = map[string]set{
	"field": {scenarios: fieldReports, doc: "docs/compare.md", intro: fieldReportsIntro,
		title: "forwarder-vpp and the stock forwarder, field report by field report"},
	// E2E_UPSTREAM_SLOW: every example runs, not only make test's share of them.
	"upstream": {scenarios: upstreamExamples, doc: "docs/upstream-results.md", intro: upstreamExamplesIntro,
		title: "forwarder-vpp and the stock forwarder on NSM's example suite", env: []string{"E2E_UPSTREAM_SLOW=1"}},
}

// setDocument is -doc's default: the chosen set's document.
const setDocument = "the set's"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-compare:", err)
		os.Exit(1)
	}
}

func run() error {
	runs := flag.Int("runs", 3, "runs of every scenario on each forwarder")
	root := flag.String("root", ".", "repository root")
	lock := flag.String("lock", "", "file to flock around each run of the suite, to take turns with other heavy jobs")
	keep := flag.String("results", "", "also keep every run's results (JSON lines) in this file, and each suite's log beside it")
	only := flag.String("only", "", "run only the scenarios whose test name matches this regexp")
	setName := flag.String("set", "field", "scenarios to compare: field (the field reports) or upstream (NSM's example suite)")
	doc := flag.String("doc", setDocument, "document to write the table into, under the root (empty: none)")
	command := flag.String("command", "make compare", "what a person runs to measure again, for the document's header")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: e2e-compare [flags] (as root, from the repository root)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	chosenSet, ok := sets[*setName]
	if !ok {
		return fmt.Errorf("-set %q: field or upstream", *setName)
	}
	if *doc == setDocument {
		*doc = chosenSet.doc
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "e2e-compare-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	testBinary := filepath.Join(work, "e2e.test")
	build := exec.Command("go", "test", "-c", "-o", testBinary, "./test/e2e/")
	build.Dir, build.Stdout, build.Stderr = rootDir, os.Stderr, os.Stderr
	if err = build.Run(); err != nil {
		return fmt.Errorf("building the e2e suite: %w", err)
	}
	resultsPath := *keep
	if resultsPath == "" {
		resultsPath = filepath.Join(work, "results.jsonl")
	}
	if err = os.Remove(resultsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	chosen, absent, err := selected(filepath.Join(rootDir, "test", "e2e"), chosenSet.scenarios, *only)
	if err != nil {
		return err
	}
	if len(chosen) == 0 {
		return errors.New("no scenario to run")
	}
	started := time.Now()
	skipped := map[string]string{}
	for i := 1; i <= *runs; i++ {
		for _, fwd := range []string{reference, subject} {
			logPath := suiteLog(work, *keep, i, fwd)
			fmt.Fprintf(os.Stderr, "e2e-compare: run %d/%d on %s: %d scenarios (log: %s)\n", i, *runs, fwd, len(chosen), logPath)
			took, runErr := runSuite(rootDir, testBinary, chosen, chosenSet.env, fwd, resultsPath, logPath, *lock, skipped)
			fmt.Fprintf(os.Stderr, "e2e-compare: run %d/%d on %s took %s (%s)\n", i, *runs, fwd, took.Round(time.Second), outcome(runErr))
		}
	}
	recorded, err := compare.Read(resultsPath)
	if err != nil {
		return err
	}
	results, stray := underRowNames(recorded, chosen)
	for _, r := range stray {
		fmt.Fprintf(os.Stderr, "e2e-compare: %s recorded %q on %s, not a row of this set\n", r.Test, r.Scenario, r.Forwarder)
	}
	names := make([]string, 0, len(chosen))
	for _, s := range chosen {
		if _, ok := skipped[s.name]; !ok {
			names = append(names, s.name)
		}
	}
	summary := compare.Summarize(results, reference, subject, *runs, names)
	var out strings.Builder
	fmt.Fprintf(&out, "`%s`: %d runs of each scenario on each forwarder, %s in all.\n\n", *command, *runs, time.Since(started).Round(time.Second))
	out.WriteString(summary.Markdown())
	for _, s := range absent {
		fmt.Fprintf(&out, "\nNot run: %s (no %s in this tree).\n", s.name, s.topLevel())
	}
	for _, s := range chosen {
		if reason, ok := skipped[s.name]; ok {
			fmt.Fprintf(&out, "\nNot run: %s (%s skipped: %s).\n", s.name, s.test, reason)
		}
	}
	if left := summary.Leftovers(); left != "" {
		fmt.Fprintf(&out, "\nLeft behind once every client had closed:\n%s", left)
	}
	failures := summary.Failures()
	if len(failures) > 0 {
		fmt.Fprintf(&out, "\n%s does worse than %s:\n  %s\n", subject, reference, strings.Join(failures, "\n  "))
	} else {
		fmt.Fprintf(&out, "\n%s passes every scenario and is nowhere slower than %s beyond the spread of the runs.\n", subject, reference)
	}
	fmt.Print(out.String())
	if *doc != "" {
		run := figures.Run{Command: *command, Started: started, Duration: time.Since(started)}
		if len(failures) > 0 {
			run.ExitStatus = 1
		}
		path := filepath.Join(rootDir, *doc)
		if err = figures.Write(rootDir, path, chosenSet.title, run, chosenSet.intro+out.String()); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "e2e-compare: wrote %s\n", path)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d shortfalls of %s", len(failures), subject)
	}
	return nil
}

// suiteLog is where run i of the suite on fwd logs: beside the kept results (upstream.jsonl gives
// upstream-run1-stock.log), so that a failure found hours into a comparison can be read after it;
// in the temporary directory otherwise.
func suiteLog(work, keptResults string, i int, fwd string) string {
	name := fmt.Sprintf("run%d-%s.log", i, fwd)
	if keptResults == "" {
		return filepath.Join(work, name)
	}
	return strings.TrimSuffix(keptResults, filepath.Ext(keptResults)) + "-" + name
}

// selected returns the scenarios of list to run: those whose test exists in dir's test files
// (and matches only), and those whose test does not exist.
func selected(dir string, list []scenario, only string) (chosen, absent []scenario, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, nil, err
	}
	onlyPattern, err := regexp.Compile(only)
	if err != nil {
		return nil, nil, fmt.Errorf("-only: %w", err)
	}
	var sources strings.Builder
	for _, f := range files {
		data, readErr := os.ReadFile(f)
		if readErr != nil {
			return nil, nil, readErr
		}
		sources.Write(data)
	}
	for _, s := range list {
		switch {
		case !onlyPattern.MatchString(s.test):
		case strings.Contains(sources.String(), "func "+s.topLevel()+"(t *testing.T)"):
			chosen = append(chosen, s)
		default:
			absent = append(absent, s)
		}
	}
	return chosen, absent, nil
}

// runSuite runs the chosen scenarios once on fwd. A failing scenario fails the suite, which
// is expected of stock: the results file says what happened. A test that recorded no result
// (it failed before it could, or it does not record) gets one from the suite's own verdict; one
// that skipped (no real VPP on the machine) gets none, and its reason goes into skipped.
func runSuite(root, testBinary string, chosen []scenario, env []string, fwd, resultsPath, logPath, lock string, skipped map[string]string) (time.Duration, error) {
	var tests []string
	for _, s := range chosen {
		if !slices.Contains(tests, s.topLevel()) {
			tests = append(tests, s.topLevel())
		}
	}
	argv := []string{testBinary, "-test.run", "^(" + strings.Join(tests, "|") + ")$", "-test.count=1", "-test.timeout=3h", "-test.v"}
	if lock != "" {
		argv = append([]string{"flock", lock}, argv...)
	}
	before, err := countResults(resultsPath, fwd)
	if err != nil {
		return 0, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(root, "test", "e2e")
	cmd.Env = append(append(os.Environ(), env...), "E2E_FORWARDER="+fwd, compare.ResultsVariable+"="+resultsPath)
	progress := &progressLines{out: os.Stderr, tests: testsOf(chosen), prefix: "e2e-compare: " + fwd + ": "}
	cmd.Stdout = io.MultiWriter(logFile, progress)
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	runErr := cmd.Run()
	took := time.Since(start)
	after, err := countResults(resultsPath, fwd)
	if err != nil {
		return took, err
	}
	logData, err := os.ReadFile(logPath)
	if err != nil {
		return took, err
	}
	log := string(logData)
	for _, s := range chosen {
		if after[s.test] > before[s.test] {
			// A test fails after its result if its domain's tear-down finds something left.
			if strings.Contains(log, "--- FAIL: "+s.test+" (") {
				if err = compare.FailAfterward(resultsPath, s.test, fwd, "tear-down (see the suite's log)"); err != nil {
					return took, err
				}
			}
			continue
		}
		if reason, ok := compare.SkipReason(log, s.test); ok {
			skipped[s.name] = reason
			continue
		}
		passed := strings.Contains(log, "--- PASS: "+s.test+" ")
		r := compare.Result{Scenario: s.name, Test: s.test, Forwarder: fwd, Passed: passed, Heals: -1}
		if !passed {
			r.FailedAt = "the test (it recorded no step)"
		}
		if err = compare.Append(resultsPath, r); err != nil {
			return took, err
		}
	}
	return took, runErr
}

// countResults counts fwd's results per test in path.
func countResults(path, fwd string) (map[string]int, error) {
	results, err := compare.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, r := range results {
		if r.Forwarder == fwd {
			counts[r.Test]++
		}
	}
	return counts, nil
}

func outcome(err error) string {
	if err == nil {
		return "all passed"
	}
	return "some failed: " + err.Error()
}
