// Package k8s holds the checks of make k8s-e2e that need no cluster: that it and make kind-e2e,
// asked for by name, fail naming what is missing instead of reporting success for nothing.
package k8s

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// pathWithout returns a PATH holding every command of this PATH but the hidden ones: a machine
// where those are not installed.
func pathWithout(t *testing.T, hidden ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if contains(hidden, name) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				continue // an earlier PATH entry has it
			}
			target := filepath.Join(d, name)
			if info, err := os.Stat(target); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
				continue
			}
			require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
		}
	}
	return dir
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// runWithout runs argv in the repository with the hidden commands absent from PATH and returns
// its output and exit code.
func runWithout(t *testing.T, env []string, hidden []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), append(env, "PATH="+pathWithout(t, hidden...))...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		require.True(t, ok, "%v: %s", err, out)
		code = exitErr.ExitCode()
	}
	return string(out), code
}

// TestK8sE2EFailsNamingWhatIsMissing: on a machine without etcd (and with nothing installed for
// it, K8S_E2E_INSTALL=no), the k8s-e2e script behind make k8s-e2e stops before it starts
// anything, non-zero, naming etcd; as a user that is not root, it names root instead.
func TestK8sE2EFailsNamingWhatIsMissing(t *testing.T) {
	out, code := runWithout(t, []string{"K8S_E2E_INSTALL=no", "K8S_PREFIX=hkprereq"}, []string{"etcd"},
		"scripts/k8s-e2e.sh")
	t.Logf("scripts/k8s-e2e.sh without etcd exited %d:\n%s", code, out)
	require.NotZero(t, code, "the run reported success without etcd:\n%s", out)
	if os.Geteuid() != 0 {
		require.Contains(t, out, "must run as root")
		return
	}
	require.Contains(t, out, "k8s-e2e: FAILED: missing:")
	require.Regexp(t, `missing:.*\betcd\b`, out)
	require.NotContains(t, out, "starting etcd", "the run went on past the missing prerequisite")
	require.NoDirExists(t, "/var/lib/hkprereq-k8s", "the failed run left its state directory")
}

// TestKindE2EFailsNamingWhatIsMissing: make kind-e2e on a machine without Docker and kind fails,
// naming them, instead of skipping to a green run.
func TestKindE2EFailsNamingWhatIsMissing(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	out, code := runWithout(t, nil, []string{"docker", "kind"}, "make", "kind-e2e")
	t.Logf("make kind-e2e without docker and kind exited %d:\n%s", code, out)
	require.NotZero(t, code, "make kind-e2e reported success without Docker or kind:\n%s", out)
	require.Contains(t, out, "--- FAIL: TestKindE2E")
	require.Contains(t, out, "needs Docker, kind, kubectl and git")
	require.Contains(t, out, "docker is not on PATH")
	require.Contains(t, out, "kind is not on PATH")
	require.NotContains(t, out, "--- SKIP: TestKindE2E")
}
