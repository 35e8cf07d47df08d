package realvpp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp"

	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// netnsOf is the inode of a process's network namespace.
func netnsOf(t *testing.T, path string) uint64 {
	t.Helper()
	var stat syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &stat))
	return stat.Ino
}

func TestStartAnswersInItsOwnNamespaceAndStopLeavesNothing(t *testing.T) {
	binary := realvpp.Require(t)
	started := time.Now()
	vpp, err := realvpp.Start(context.Background(), realvpp.Options{Binary: binary})
	require.NoError(t, err)
	t.Logf("VPP answered %s after start; resident memory %s", time.Since(started).Round(10*time.Millisecond), statusField(t, vpp.Pid(), "VmRSS:"))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = vpp.Stop()
		}
	})

	conn, err := govpp.Connect(vpp.APISocket())
	require.NoError(t, err)
	version, err := vpe.NewServiceClient(conn).ShowVersion(context.Background(), &vpe.ShowVersion{})
	conn.Disconnect()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(version.Version, "24.10"), "version %q", version.Version)
	require.NotEmpty(t, vpp.Netns, "a namespace of its own")
	require.Equal(t, netnsOf(t, "/var/run/netns/"+vpp.Netns), netnsOf(t, fmt.Sprintf("/proc/%d/ns/net", vpp.Pid())), "VPP runs in its namespace")
	segments, err := filepath.Glob("/dev/shm/" + vpp.Prefix + "-*")
	require.NoError(t, err)
	require.NotEmpty(t, segments, "the API segment carries the prefix")
	require.FileExists(t, vpp.StatsSocket())
	require.Equal(t, statusField(t, os.Getpid(), "Cpus_allowed_list:"), statusField(t, vpp.Pid(), "Cpus_allowed_list:"), "VPP's main thread is not pinned to one core")

	require.NoError(t, vpp.Stop())
	stopped = true

	requireGone(t, vpp)
}

// A SIGKILLed VPP leaves its shared memory and sockets (which is why Stop sweeps); Stop removes
// them once VPP is gone.
func TestKilledVPPLeavesSegmentsThatStopRemoves(t *testing.T) {
	vpp := realvpp.StartForTest(t, realvpp.Options{})

	vpp.Kill()

	leftovers, err := vpp.Leftovers()
	require.NoError(t, err)
	require.Contains(t, leftovers, "/dev/shm/"+vpp.Prefix+"-vpe-api", "a crash leaves the API segment")
	require.Contains(t, leftovers, vpp.APISocket())
	require.NoError(t, vpp.Stop())
	requireGone(t, vpp)
}

// Two VPPs side by side, as every helper and every e2e node runs its own: their prefixes and
// runtime directories differ, and each answers on its own socket.
func TestTwoVPPsDoNotShareAnything(t *testing.T) {
	a := realvpp.StartForTest(t, realvpp.Options{})
	b := realvpp.StartForTest(t, realvpp.Options{InCallerNetns: true})
	require.NotEqual(t, a.Prefix, b.Prefix)
	require.NotEqual(t, a.Dir, b.Dir)
	require.Empty(t, b.Netns, "InCallerNetns")
	self, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", b.Pid()))
	require.NoError(t, err)
	require.Equal(t, self, theirs)
	for _, vpp := range []*realvpp.VPP{a, b} {
		conn, err := govpp.Connect(vpp.APISocket())
		require.NoError(t, err)
		_, err = vpe.NewServiceClient(conn).ShowVersion(context.Background(), &vpe.ShowVersion{})
		conn.Disconnect()
		require.NoError(t, err)
	}
}

// statusField is one field of /proc/<pid>/status.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, field); ok {
			return strings.TrimSpace(value)
		}
	}
	t.Fatalf("no %s for %d", field, pid)
	return ""
}

func requireGone(t *testing.T, vpp *realvpp.VPP) {
	t.Helper()
	select {
	case <-vpp.Exited():
	case <-time.After(time.Second):
		t.Fatal("vpp still runs after Stop")
	}
	leftovers, err := vpp.Leftovers()
	require.NoError(t, err)
	require.Empty(t, leftovers)
	require.NoDirExists(t, vpp.Dir)
	require.NoFileExists(t, "/var/run/netns/"+vpp.Netns)
}

func TestFindPrefersTheEnvironmentAndRefusesABadOne(t *testing.T) {
	binary, err := realvpp.Find()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv(realvpp.BinaryEnv, binary)
	found, err := realvpp.Find()
	require.NoError(t, err)
	require.Equal(t, binary, found)

	t.Setenv(realvpp.BinaryEnv, t.TempDir())
	_, err = realvpp.Find()
	require.ErrorContains(t, err, realvpp.BinaryEnv+"=")
	var notFound *realvpp.NotFoundError
	require.False(t, errors.As(err, &notFound), "a set variable that is wrong must fail, not skip")
}

// On a machine without VPP anywhere, Find names every place it tried, which the tests' skip
// line shows.
func TestFindWithoutAnyVPPSaysWhereItLooked(t *testing.T) {
	t.Setenv(realvpp.BinaryEnv, "")
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())

	_, err := realvpp.Find()
	var notFound *realvpp.NotFoundError
	require.ErrorAs(t, err, &notFound)
	require.Contains(t, err.Error(), "vpp on PATH")
	require.Contains(t, err.Error(), "../shared/vpp/*.tar.xz")
}
