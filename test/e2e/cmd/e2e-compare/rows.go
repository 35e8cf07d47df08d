package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
)

// underRowNames keeps the results of the chosen scenarios' tests, each under its scenario's
// row name, whatever name the test recorded it under; stray are the results of other tests
// (a test's subtests the set does not list).
func underRowNames(results []compare.Result, chosen []scenario) (rows, stray []compare.Result) {
	names := map[string]string{}
	for _, s := range chosen {
		names[s.test] = s.name
	}
	for _, r := range results {
		name, ok := names[r.Test]
		if !ok {
			stray = append(stray, r)
			continue
		}
		r.Scenario = name
		rows = append(rows, r)
	}
	return rows, stray
}

func testsOf(chosen []scenario) map[string]bool {
	tests := map[string]bool{}
	for _, s := range chosen {
		tests[s.test] = true
	}
	return tests
}

// progressLines echoes, from a suite's verbose output, the verdict line of each chosen
// scenario as it comes, so that an hour-long run shows where it is.
type progressLines struct {
	out     io.Writer
	tests   map[string]bool
	prefix  string
	pending []byte
}

func (p *progressLines) Write(data []byte) (int, error) {
	p.pending = append(p.pending, data...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(data), nil
		}
		line := strings.TrimSpace(string(p.pending[:i]))
		p.pending = p.pending[i+1:]
		// "--- PASS: TestX/sub (12.34s)"
		fields := strings.Fields(line)
		if len(fields) >= 3 && fields[0] == "---" && p.tests[fields[2]] {
			fmt.Fprintln(p.out, p.prefix+line)
		}
	}
}
