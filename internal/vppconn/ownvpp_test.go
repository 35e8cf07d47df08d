package vppconn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/internal/vppconn"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// ownVPPRoot lays out what the forwarder's own-VPP mode finds in the stock image, under a root
// directory: `vpp` on PATH (the real one) and, at <root>/etc/vpp/helper/vpp.conf, a start-up
// configuration for this VPP build (no DPDK, 4k pages, a prefix of its own), which vpphelper
// uses instead of writing its default. It returns the root and VPP's layout there.
func ownVPPRoot(t *testing.T, name string) (string, realvpp.Layout) {
	t.Helper()
	binary := realvpp.Require(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(binary, filepath.Join(bin, "vpp")))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	root, err := os.MkdirTemp("", "fwdown-")
	require.NoError(t, err)
	layout, err := realvpp.NewLayout(filepath.Join(root, "var/run/vpp"), name)
	require.NoError(t, err)
	require.NoError(t, layout.WriteConfig())
	config := filepath.Join(root, "etc/vpp/helper/vpp.conf")
	require.NoError(t, os.MkdirAll(filepath.Dir(config), 0o755))
	require.NoError(t, os.Rename(layout.ConfigPath(), config))
	t.Cleanup(func() {
		require.NoError(t, layout.Sweep())
		_ = os.RemoveAll(root)
	})
	return root, layout
}

// vppOf finds the running VPP started with the configuration under root.
func vppOf(t *testing.T, root string) int {
	t.Helper()
	config := filepath.Join(root, "etc/vpp/helper/vpp.conf")
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, entry := range entries {
		pid, convErr := strconv.Atoi(entry.Name())
		if convErr != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), config) {
			return pid
		}
	}
	t.Fatalf("no VPP runs with %s", config)
	return 0
}

// startOwnVPP connects as the forwarder does when no external VPP exists, starting the real VPP
// under root; the VPP lives until stop is called or the test ends.
func startOwnVPP(ctx context.Context, t *testing.T, root string) (conn *vppconn.Connection, stop context.CancelFunc) {
	t.Helper()
	lifetime, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	conn, err := vppconn.Connect(ctx, filepath.Join(root, "var/run/vpp/external/vpp-api.sock"), vppconn.WithRootDir(root), vppconn.WithLifetime(lifetime))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn, stop
}

func requireEnded(t *testing.T, conn *vppconn.Connection) {
	t.Helper()
	select {
	case <-conn.Exited:
	case <-time.After(5 * time.Second):
		t.Fatal("VPP did not end with the forwarder's lifetime")
	}
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }, 5*time.Second, 50*time.Millisecond, "VPP %d still runs", pid)
}

// The forwarder's own VPP (no external socket): vpphelper starts the real binary with the given
// configuration, the connection answers, and the end of the lifetime ends VPP.
func TestOwnVPPStartsAnswersAndStopsWithItsLifetime(t *testing.T) {
	root, layout := ownVPPRoot(t, "own")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, stop := startOwnVPP(ctx, t, root)
	require.False(t, conn.External)
	require.Equal(t, layout.APISocket(), conn.Socket)
	require.Equal(t, layout.StatsSocket(), conn.StatsSocket())
	require.FileExists(t, conn.StatsSocket())
	version, err := vpe.NewServiceClient(conn).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(version.Version, "24.10"), version.Version)
	pid := vppOf(t, root)

	conn.Close()
	stop()

	requireEnded(t, conn)
	requireGone(t, pid)
}

// A VPP that crashes (SIGKILL) is reported at once on Exited, which the forwarder turns into its
// own stop (internal/startup); calls still made on the dead connection fail at their deadline,
// not later; and a VPP started again in the same place (as the restarted pod does) answers,
// whatever the dead one left (its socket, its shared memory).
func TestOwnVPPCrashIsReportedAtOnceAndAFreshOneStarts(t *testing.T) {
	root, _ := ownVPPRoot(t, "crash")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _ := startOwnVPP(ctx, t, root)

	require.NoError(t, syscall.Kill(vppOf(t, root), syscall.SIGKILL))
	select {
	case err := <-conn.Exited:
		require.ErrorContains(t, err, "signal: killed")
	case <-time.After(2 * time.Second):
		t.Fatal("the crash was not reported within 2s")
	}
	callCtx, cancelCall := context.WithTimeout(ctx, time.Second)
	defer cancelCall()
	start := time.Now()
	_, err := vpe.NewServiceClient(conn).ShowVersion(callCtx, &vpe.ShowVersion{})
	require.Error(t, err)
	require.Less(t, time.Since(start), 3*time.Second, "a call on the dead VPP outlived its deadline")

	again, stop := startOwnVPP(ctx, t, root)
	_, err = vpe.NewServiceClient(again).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err, "a fresh VPP must answer where the crashed one was")
	stop()
	requireEnded(t, again)
}
