package compare

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// ResultsVariable names the file that scenarios append their Result to; unset, they record
// nothing.
const ResultsVariable = "E2E_RESULTS"

// Result is one run of one scenario against one forwarder.
type Result struct {
	Scenario string `json:"scenario"`
	// Test is the test, or subtest, that ran the scenario (testing.T.Name).
	Test      string `json:"test"`
	Forwarder string `json:"forwarder"`
	Passed    bool   `json:"passed"`
	// FailedAt is the step whose check failed, in the scenario's words.
	FailedAt string `json:"failed_at,omitempty"`
	// Recovery is how long the user-visible recovery took: a heal after a crash, or the
	// release of an expired connection; zero when the scenario has none or never got there.
	Recovery time.Duration `json:"recovery_ns,omitempty"`
	// Heals counts the client's heals where none should happen (idle streams cut); -1 when the
	// scenario does not count them.
	Heals int `json:"heals"`
	// Leaked lists what was left in pods, nodes and VPP once every client had closed.
	Leaked []string `json:"leaked"`
	// RequestLatencies are the clients' first Requests, as they measured them.
	RequestLatencies []time.Duration `json:"request_latencies_ns"`
}

// Append adds r to path, one JSON object a line.
func Append(path string, r Result) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	return errors.Join(err, f.Close())
}

// Read returns every result in path.
func Read(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var results []Result
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for line := 1; scanner.Scan(); line++ {
		var r Result
		if err = json.Unmarshal(scanner.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		results = append(results, r)
	}
	return results, scanner.Err()
}

// FailAfterward marks the last result of test on forwarder in path as failed at step, if it
// passed: the test failed after it had recorded its result (its domain's tear-down check, say),
// and the table must not say it passed.
func FailAfterward(path, test, forwarder, step string) error {
	results, err := Read(path)
	if err != nil {
		return err
	}
	last := -1
	for i, r := range results {
		if r.Test == test && r.Forwarder == forwarder {
			last = i
		}
	}
	if last < 0 || !results[last].Passed {
		return nil
	}
	results[last].Passed, results[last].FailedAt = false, step
	rewritten := path + ".rewrite"
	if err = os.Remove(rewritten); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, r := range results {
		if err = Append(rewritten, r); err != nil {
			return err
		}
	}
	return os.Rename(rewritten, path)
}
