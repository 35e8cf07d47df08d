package realvpp

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// LogEnv names a file to which every test that asks for a real VPP appends one line when it
// ends: "<outcome>\t<package directory>\t<test name>", outcome pass, fail or skip (with the skip
// reason after a tab). `make test` sets it and prints how many tests ran on real VPP
// (scripts/realvpp-summary.sh).
const LogEnv = "FORWARDER_REALVPP_LOG"

// recordOutcome appends the test's outcome to $FORWARDER_REALVPP_LOG, when set, once it ends.
func recordOutcome(t testing.TB) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return
	}
	t.Cleanup(func() {
		outcome := "pass"
		switch {
		case t.Failed():
			outcome = "fail"
		case t.Skipped():
			outcome = "skip"
		}
		appendLine(path, fmt.Sprintf("%s\t%s\t%s\n", outcome, packageDir(), t.Name()))
	})
}

// recordSkip appends a skip for lack of VPP, with its reason.
func recordSkip(t testing.TB, reason string) {
	if path := os.Getenv(LogEnv); path != "" {
		appendLine(path, fmt.Sprintf("skip\t%s\t%s\t%s\n", packageDir(), t.Name(), reason))
	}
}

func appendLine(path, line string) {
	// One write per line with O_APPEND: lines of test processes running side by side do not mix.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

func packageDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return "?"
	}
	if root, rootErr := RepoRoot(); rootErr == nil {
		if rel, relErr := filepath.Rel(root, dir); relErr == nil {
			return "./" + rel
		}
	}
	return dir
}
