package figures_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/figures"
)

func TestGoBenchResultsBecomeOneTable(t *testing.T) {
	output := `goos: linux
BenchmarkInstall/policyroute/50x5-2         	      10	         0 ns/op	     29600 ns/policy
BenchmarkRestartRecovery/policyroute/50x5-2 	      10	         0 ns/op	     15000 ns/policy	         0 writes/recovery
BenchmarkRestartRecovery/iprule/50x5-2      	      10	         0 ns/op	   3082000 ns/policy	       996 writes/recovery
PASS
`
	require.Equal(t, `| benchmark | ns/policy | writes/recovery |
|---|---|---|
| Install/policyroute/50x5 | 29.6 µs | – |
| RestartRecovery/policyroute/50x5 | 15.0 µs | 0 |
| RestartRecovery/iprule/50x5 | 3.08 ms | 996 |
`, figures.GoBenchTable(output))
}

func TestMarkdownTablesKeepTheirCaption(t *testing.T) {
	output := "=== RUN x\nrefreshes paced\n| a | b |\n|---|---|\n| 1 | 2 |\n    load_test.go:12: log\n| c |\n"
	require.Equal(t, "refreshes paced\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| c |\n", figures.MarkdownTables(output))
}

func TestHeaderNamesCommandCommitDateAndMachine(t *testing.T) {
	header := figures.Header("../..", "Load", figures.Run{
		Command: "make bench", Argv: []string{"go", "test", "-run", "^$", "./internal/networkservice/policyroute/"}, Started: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC),
		Duration: 90 * time.Second, ExitStatus: 2,
	})
	require.Contains(t, header, "# Load\n")
	require.Contains(t, header, "- Command: `make bench` (`go test -run '^$' ./internal/networkservice/policyroute/`), exit status 2, 1m30s\n")
	require.Contains(t, header, "- Date: 2026-12-02 07:00 UTC\n")
	require.Regexp(t, `- Commit: [0-9a-f]{7,}`, header)
	require.Regexp(t, `- Machine: \d+ vCPUs`, header)
	require.False(t, strings.Contains(header, "unknown"), header)
}
