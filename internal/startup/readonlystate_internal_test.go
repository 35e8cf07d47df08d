package startup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

// A read-only NSM_STATE_DIR does not stop the forwarder: it starts, serves, says at ERROR that
// restart recovery is off, and takes its journal (locked) once the directory is writable.
func TestReadOnlyStateDirStartsServingWithRecoveryOff(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	f := newSimForwarder(t, domain, journalNetnsPrefix)
	state := f.cfg.StateDir
	require.NoError(t, os.MkdirAll(state, 0o700))
	require.NoError(t, unix.Mount(state, state, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(state, unix.MNT_DETACH) })
	require.NoError(t, unix.Mount("", state, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""))

	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	ctx, logged := captureLog(t, ctx)
	var phases lifecycle.Lifecycle
	defer func() { abort(context.Canceled); stopWithin(t, ctx, &phases, 15*time.Second) }()
	require.NoError(t, startIn(ctx, f.node, abort, f.cfg, &phases, ConnectVPP), "a read-only state directory stopped start-up")

	loud := ""
	for _, entry := range logged.AllEntries() {
		if entry.Level.String() == "error" && strings.Contains(entry.Message, "restart recovery is OFF") {
			loud = entry.Message
		}
	}
	require.Contains(t, loud, "NSM_STATE_DIR="+state, "no ERROR line says that restart recovery is off")

	peer := domain.Issue("/nsmgr")
	conn, err := grpc.NewClient("unix://"+f.listenSocket, grpctransport.DialOptions(peer, grpctransport.TokenGenerator(peer, time.Minute), grpctransport.DefaultKeepalive)...)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	monitorCtx, cancelMonitor := context.WithTimeout(ctx, 5*time.Second)
	defer cancelMonitor()
	monitor, err := networkservice.NewMonitorConnectionClient(conn).MonitorConnections(monitorCtx, &networkservice.MonitorScopeSelector{})
	require.NoError(t, err)
	_, err = monitor.Recv()
	require.NoError(t, err, "the forwarder does not serve")

	require.NoError(t, unix.Mount("", state, "", unix.MS_BIND|unix.MS_REMOUNT, ""))
	dir := filepath.Join(state, f.cfg.Name)
	require.Eventually(t, func() bool {
		locked, err := journal.Locked(dir)
		return err == nil && locked
	}, 20*time.Second, 50*time.Millisecond, "the forwarder did not take its journal once the directory was writable")
}
