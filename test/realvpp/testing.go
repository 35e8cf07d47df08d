package realvpp

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Require returns the vpp binary tests run, or skips the test with one line saying why there is
// none (as on a fresh machine without ../shared/vpp). Any other problem fails the test.
func Require(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skip(t, "real VPP needs root (network namespaces, af_packet)")
	}
	binary, err := Find()
	var notFound *NotFoundError
	if errors.As(err, &notFound) {
		skip(t, notFound.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	recordOutcome(t)
	sweepStaleOnce.Do(func() {
		if err := SweepStale(); err != nil {
			t.Logf("removing dead runs' VPP leftovers: %v", err)
		}
	})
	return binary
}

var sweepStaleOnce sync.Once

func skip(t testing.TB, reason string) {
	t.Helper()
	recordSkip(t, reason)
	t.Skip(reason)
}

// StartForTest runs a VPP (see Start) until the test ends, skipping when there is none. Stop
// must leave nothing behind, or the test fails; a failed test shows VPP's output.
func StartForTest(t testing.TB, o Options) *VPP {
	t.Helper()
	vpp, err := TryStartForTest(t, o)
	if err != nil {
		t.Fatalf("starting real VPP: %v", err)
	}
	return vpp
}

// TryStartForTest is StartForTest for a test that expects some VPPs not to start (a VPP that
// misread its clock may answer nobody): it returns Start's error, with nothing left running,
// instead of failing the test.
func TryStartForTest(t testing.TB, o Options) (*VPP, error) {
	t.Helper()
	if o.Binary == "" {
		o.Binary = Require(t)
	}
	vpp, err := Start(context.Background(), o)
	if err != nil {
		return nil, err
	}
	for _, reason := range vpp.Discarded {
		t.Logf("started real VPP again: %v", reason)
	}
	if vpp.Misclocked != nil {
		t.Logf("kept real VPP as asked, though: %v", vpp.Misclocked)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("real VPP %s (pid %d, %s), last lines:\n%s", vpp.Prefix, vpp.Pid(), vpp.State(), vpp.OutputTail(30))
		}
		if err := vpp.Stop(); err != nil {
			t.Errorf("stopping real VPP %s: %v", vpp.Prefix, err)
		}
	})
	return vpp, nil
}

// SweepStale removes the shared-memory segments and namespaces that VPPs of dead test runs
// left (a run killed before its clean-up): only names with prefixBase and the pid of a process
// that no longer exists.
func SweepStale() error {
	var errs []error
	segments, err := os.ReadDir(shmDir)
	errs = append(errs, err)
	for _, segment := range segments {
		if deadRun(segment.Name()) {
			errs = append(errs, os.Remove(shmDir+"/"+segment.Name()))
		}
	}
	namespaces, _ := os.ReadDir("/var/run/netns")
	for _, ns := range namespaces {
		if deadRun(ns.Name()) {
			errs = append(errs, deleteNetns(ns.Name()))
		}
	}
	dirs, _ := os.ReadDir(os.TempDir())
	for _, dir := range dirs {
		if dir.IsDir() && deadRun(dir.Name()) {
			errs = append(errs, os.RemoveAll(filepath.Join(os.TempDir(), dir.Name())))
		}
	}
	return errors.Join(errs...)
}

// OwnRuns lists the prefixes of this process's VPP runs that still have something on the
// machine: shared-memory segments, a namespace or a runtime directory.
func OwnRuns() ([]string, error) {
	own := prefixBase + strconv.Itoa(os.Getpid()) + "-"
	runs := map[string]bool{}
	for _, dir := range []string{shmDir, "/var/run/netns", os.TempDir()} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, entry := range entries {
			if rest, ok := strings.CutPrefix(entry.Name(), own); ok {
				run, _, _ := strings.Cut(rest, "-")
				runs[own+run] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(runs)), nil
}

func deadRun(name string) bool {
	rest, ok := strings.CutPrefix(name, prefixBase)
	if !ok {
		return false
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
}

// ownVPPConfig is where vpphelper reads VPP's start-up configuration, under its root.
const ownVPPConfig = "etc/vpp/helper/vpp.conf"

// OwnVPPRoot lays out what the forwarder's own-VPP mode finds in the stock image, under a root
// directory of its own (vppconn.WithRootDir): `vpp` on PATH (the real one, for the rest of the
// test) and, at <root>/etc/vpp/helper/vpp.conf, this VPP build's start-up configuration with its
// sockets in <root>/var/run/vpp (vpphelper uses an existing file instead of writing its default,
// which this build cannot run: docs/vpp.md). It returns the root and VPP's layout there; both go
// when the test ends, with whatever a killed VPP left.
func OwnVPPRoot(t *testing.T, name string) (string, Layout) {
	t.Helper()
	return OwnVPPRootRunning(t, name, Require(t))
}

// OwnVPPRootRunning is OwnVPPRoot with binary as the `vpp` on PATH (MisclockingBinary's, say).
func OwnVPPRootRunning(t *testing.T, name, binary string) (string, Layout) {
	t.Helper()
	bin := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(bin, "vpp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	root, err := os.MkdirTemp("", prefixBase+strconv.Itoa(os.Getpid())+"-root-")
	if err != nil {
		t.Fatal(err)
	}
	layout, err := NewLayout(filepath.Join(root, "var/run/vpp"), name)
	if err == nil {
		err = layout.WriteConfig()
	}
	config := filepath.Join(root, ownVPPConfig)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(config), 0o755)
	}
	if err == nil {
		err = os.Rename(layout.ConfigPath(), config)
	}
	t.Cleanup(func() {
		if sweepErr := layout.Sweep(); sweepErr != nil {
			t.Errorf("removing what the forwarder's VPP left: %v", sweepErr)
		}
		_ = os.RemoveAll(root)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, layout
}

// OwnVPPPid is the process ID of the VPP running with the configuration OwnVPPRoot wrote under
// root; the test fails when there is none.
func OwnVPPPid(t *testing.T, root string) int {
	t.Helper()
	pids := OwnVPPPids(t, root)
	if len(pids) == 0 {
		t.Fatalf("no VPP runs with %s", filepath.Join(root, ownVPPConfig))
	}
	return pids[0]
}

// OwnVPPPids are the processes running with the configuration OwnVPPRoot wrote under root: every
// VPP started there that still runs, and whatever launched one (MisclockingBinary's strace).
func OwnVPPPids(t *testing.T, root string) []int {
	t.Helper()
	config := filepath.Join(root, ownVPPConfig)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, entry := range entries {
		pid, convErr := strconv.Atoi(entry.Name())
		if convErr != nil {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline")); strings.Contains(string(cmdline), config) {
			pids = append(pids, pid)
		}
	}
	return pids
}
