package vppconn_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

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
	root, layout := realvpp.OwnVPPRoot(t, "own")
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
	pid := realvpp.OwnVPPPid(t, root)

	conn.Close()
	stop()

	requireEnded(t, conn)
	requireGone(t, pid)
}

// A VPP that crashes (SIGKILL) is reported at once on Exited, which the forwarder turns into its
// own stop (internal/startup); a call made on the dead connection fails, by its deadline at the
// latest; and a VPP started again in the same place (as the restarted pod does) answers,
// whatever the dead one left (its socket, its shared memory).
func TestOwnVPPCrashIsReportedAtOnceAndAFreshOneStarts(t *testing.T) {
	root, _ := realvpp.OwnVPPRoot(t, "crash")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _ := startOwnVPP(ctx, t, root)

	require.NoError(t, syscall.Kill(realvpp.OwnVPPPid(t, root), syscall.SIGKILL))
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
	t.Logf("a call on the dead VPP failed after %s: %v", time.Since(start).Round(time.Millisecond), err)

	again, stop := startOwnVPP(ctx, t, root)
	_, err = vpe.NewServiceClient(again).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err, "a fresh VPP must answer where the crashed one was")
	stop()
	requireEnded(t, again)
}

// A VPP the forwarder starts may misread its clock (internal/vpp/vppclock) and stop answering new
// clients within seconds; Connect ends that run and starts another instead of handing it on.
func TestOwnVPPThatMisreadsItsClockIsStartedAgain(t *testing.T) {
	root, _ := realvpp.OwnVPPRootRunning(t, "misread", realvpp.MisclockingBinary(t, realvpp.Require(t), 1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	conn, stop := startOwnVPP(ctx, t, root)

	require.Len(t, realvpp.OwnVPPPids(t, root), 1, "the misread run is gone, with its launcher; one VPP runs")
	require.NoError(t, vppclock.Check(ctx, conn), "the VPP handed on keeps the kernel's time")
	_, err := vpe.NewServiceClient(conn).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err)
	stop()
	requireEnded(t, conn)
}

// Three misread runs in a row fail Connect, which names the clock, and leave no VPP behind.
func TestOwnVPPThatKeepsMisreadingItsClockFailsToConnect(t *testing.T) {
	root, _ := realvpp.OwnVPPRootRunning(t, "misreads", realvpp.MisclockingBinary(t, realvpp.Require(t), 3))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lifetime, stop := context.WithCancel(context.Background())
	defer stop()

	_, err := vppconn.Connect(ctx, filepath.Join(root, "var/run/vpp/external/vpp-api.sock"), vppconn.WithRootDir(root), vppconn.WithLifetime(lifetime))

	// The last run's reason: its clock off pace, or silence, at the version or at the clock.
	var offPace *vppclock.Error
	if !errors.As(err, &offPace) {
		require.ErrorContains(t, err, "as a VPP that misread its clock at start-up does")
	}
	require.Eventually(t, func() bool { return len(realvpp.OwnVPPPids(t, root)) == 0 }, 5*time.Second, 50*time.Millisecond,
		"VPPs left running: %v", realvpp.OwnVPPPids(t, root))
}
