package realvpp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	if o.Binary == "" {
		o.Binary = Require(t)
	}
	vpp, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("starting real VPP: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("real VPP %s (pid %d, %s), last lines:\n%s", vpp.Prefix, vpp.Pid(), vpp.State(), vpp.OutputTail(30))
		}
		if err := vpp.Stop(); err != nil {
			t.Errorf("stopping real VPP %s: %v", vpp.Prefix, err)
		}
	})
	return vpp
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

func deadRun(name string) bool {
	rest, ok := strings.CutPrefix(name, prefixBase)
	if !ok {
		return false
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
}
