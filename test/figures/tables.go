package figures

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MarkdownTables keeps the Markdown tables of a command's output, each with the line of text
// just above it (its caption), if any.
func MarkdownTables(output string) string {
	lines := strings.Split(output, "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		if !isTableLine(lines[i]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if i > 0 && caption(lines[i-1]) {
			b.WriteString(strings.TrimSpace(lines[i-1]) + "\n\n")
		}
		for ; i < len(lines) && isTableLine(lines[i]); i++ {
			b.WriteString(strings.TrimSpace(lines[i]) + "\n")
		}
	}
	return b.String()
}

func isTableLine(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|")
}

// caption is a line of text, not go test's own (=== RUN, --- PASS, a log line's file:line).
func caption(line string) bool {
	line = strings.TrimSpace(line)
	return line != "" && !strings.HasPrefix(line, "===") && !strings.HasPrefix(line, "---") &&
		!goTestLog.MatchString(line)
}

var goTestLog = regexp.MustCompile(`^\S+\.go:\d+:`)

// benchLine is a result line of go test -bench: name, iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)((?:\s+[0-9.e+-]+\s+\S+)+)\s*$`)

// GoBenchTable lays go test -bench's result lines out as one Markdown table: a row per
// benchmark, a column per unit it reported (ns/op, or the benchmark's own, e.g. ns/policy).
func GoBenchTable(output string) string {
	type row struct {
		name   string
		values map[string]string
	}
	var rows []row
	var units []string
	seen := map[string]bool{}
	for _, line := range strings.Split(output, "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		r := row{name: strings.TrimPrefix(m[1], "Benchmark"), values: map[string]string{}}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			value, unit := fields[i], fields[i+1]
			if unit == "ns/op" && value == "0" {
				continue // a benchmark that reports its own unit zeroes ns/op
			}
			r.values[unit] = humanize(value, unit)
			if !seen[unit] {
				seen[unit] = true
				units = append(units, unit)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return "No benchmark results in the output.\n"
	}
	var b strings.Builder
	b.WriteString("| benchmark | " + strings.Join(units, " | ") + " |\n")
	b.WriteString("|---" + strings.Repeat("|---", len(units)) + "|\n")
	for _, r := range rows {
		cells := []string{r.name}
		for _, unit := range units {
			cells = append(cells, cmpOr(r.values[unit], "–"))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// humanize writes nanoseconds in the unit that suits them (25800 ns/policy: 25.8 µs).
func humanize(value, unit string) string {
	if !strings.HasPrefix(unit, "ns/") {
		return value
	}
	ns, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return value
	}
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
