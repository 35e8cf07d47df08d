// Command e2e-compare runs the end-to-end scenarios of the field reports against the
// stock-equivalent forwarder (test/stockforwarder) and against forwarder-vpp, several times
// each, alternating, and prints one table: each scenario's outcome on both, heal or clean-up
// time, leaked objects and first Request latency, with medians and spreads. It exits non-zero
// when forwarder-vpp fails a run of a scenario or is slower than stock beyond the spread of the
// runs (`make compare`; see docs/e2e.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
)

// scenarios are the field reports' scenarios, as the tests name them in their results, with
// the tests that run them.
var scenarios = []struct{ name, test string }{
	{"forwarder restart, tap", "TestForwarderRestartOverTap"},
	{"forwarder restart, veth", "TestForwarderRestartOverVeth"},
	{"client SIGKILL, connection expires", "TestKilledClientConnectionExpires"},
	{"client and nsmgr SIGKILL, connection expires", "TestKilledClientAndNsmgrConnectionExpires"},
}

const (
	reference = "stock"
	subject   = "forwarder-vpp"
)

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
	keep := flag.String("results", "", "also keep every run's results (JSON lines) in this file")
	only := flag.String("only", "", "run only the scenarios whose test name matches this regexp")
	flag.Parse()
	if *runs < 1 {
		return errors.New("-runs must be at least 1")
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

	names, pattern := selected(*only)
	started := time.Now()
	for i := 1; i <= *runs; i++ {
		for _, fwd := range []string{reference, subject} {
			logPath := filepath.Join(work, fmt.Sprintf("run%d-%s.log", i, fwd))
			took, runErr := runSuite(rootDir, testBinary, pattern, fwd, resultsPath, logPath, *lock)
			fmt.Fprintf(os.Stderr, "e2e-compare: run %d/%d on %s took %s (%v)\n", i, *runs, fwd, took.Round(time.Second), outcome(runErr))
			if runErr != nil && fwd == subject {
				fmt.Fprintln(os.Stderr, tail(logPath, 60))
			}
		}
	}
	results, err := compare.Read(resultsPath)
	if err != nil {
		return err
	}
	summary := compare.Summarize(results, reference, subject, *runs, names)
	fmt.Printf("`make compare`: %d runs of each scenario on each forwarder, %s in all.\n\n", *runs, time.Since(started).Round(time.Second))
	fmt.Print(summary.Markdown())
	if left := summary.Leftovers(); left != "" {
		fmt.Printf("\nLeft behind once every client had closed:\n%s", left)
	}
	if failures := summary.Failures(); len(failures) > 0 {
		fmt.Printf("\n%s does worse than %s:\n  %s\n", subject, reference, strings.Join(failures, "\n  "))
		return fmt.Errorf("%d shortfalls of %s", len(failures), subject)
	}
	fmt.Printf("\n%s passes every scenario and is nowhere slower than %s beyond the spread of the runs.\n", subject, reference)
	return nil
}

// selected returns the scenarios' names and the -test.run pattern of their tests.
func selected(only string) ([]string, string) {
	var names, tests []string
	for _, s := range scenarios {
		if only != "" && !strings.Contains(s.test, only) {
			continue
		}
		names = append(names, s.name)
		tests = append(tests, s.test)
	}
	return names, "^(" + strings.Join(tests, "|") + ")$"
}

// runSuite runs the selected scenarios once on fwd. A failing scenario fails the suite, which
// is expected of stock: the results file says what happened.
func runSuite(root, testBinary, pattern, fwd, resultsPath, logPath, lock string) (time.Duration, error) {
	argv := []string{testBinary, "-test.run", pattern, "-test.count=1", "-test.timeout=60m", "-test.v"}
	if lock != "" {
		argv = append([]string{"flock", lock}, argv...)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(root, "test", "e2e")
	cmd.Env = append(os.Environ(), "E2E_FORWARDER="+fwd, compare.ResultsVariable+"="+resultsPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	err = cmd.Run()
	return time.Since(start), err
}

func outcome(err error) string {
	if err == nil {
		return "all passed"
	}
	return "some failed: " + err.Error()
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
