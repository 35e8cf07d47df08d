package startup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// ownVPPForwarder starts the forwarder in-process in its own-VPP mode with the real binary: no
// VPP socket exists, so start-up starts vpp (realvpp.OwnVPPRoot: the stock layout under a root
// of its own) in a node namespace whose uplink holds the tunnel IP, and hands it the uplink.
func ownVPPForwarder(t *testing.T) (ctx context.Context, abort context.CancelCauseFunc, phases *lifecycle.Lifecycle, vppPid int) {
	t.Helper()
	root, layout := realvpp.OwnVPPRoot(t, "startup")
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	_, registrySocket := serveRegistry(t, domain)
	node := vppsimtest.NewNetns(t, netnsPrefix)
	uplinkPeer := vppsimtest.NewNetns(t, netnsPrefix)
	vppsimtest.Veth(t, node, "fcs-up0", "192.0.2.10/24", uplinkPeer, "fcs-up1", "192.0.2.1/24")
	cfg, _ := forwarderEnv(t, domain, registrySocket, root+"/var/run/vpp/external/vpp-api.sock")
	cfg.TunnelIP = net.ParseIP("192.0.2.10")
	cfg.VppInit = vppinit.AfPacket
	connect := func(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error) {
		return vppconn.Connect(ctx, socket, vppconn.WithLifetime(lifetime), vppconn.WithRootDir(root))
	}
	ctx, abort = context.WithCancelCause(context.Background())
	t.Cleanup(func() { abort(nil) })
	phases = new(lifecycle.Lifecycle)
	require.NoError(t, startIn(ctx, node, abort, cfg, phases, connect))
	require.FileExists(t, layout.APISocket())
	return ctx, abort, phases, realvpp.OwnVPPPid(t, root)
}

func gone(pid int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// A zombie is gone too: it only waits to be reaped.
	return err != nil || strings.Contains(string(status), ") Z ")
}

// SIGTERM: the forwarder's shutdown ends with its VPP gone, never running on after it.
func TestShutdownEndsTheForwardersOwnVPP(t *testing.T) {
	ctx, abort, phases, vppPid := ownVPPForwarder(t)
	require.False(t, gone(vppPid))

	abort(context.Canceled)
	stopWithin(t, ctx, phases, 15*time.Second)

	require.True(t, gone(vppPid), "VPP %d still runs after the forwarder's shutdown", vppPid)
}

// A VPP that crashes stops the forwarder by itself, saying so, within its shutdown bounds, and
// leaves no VPP process behind.
func TestCrashOfTheOwnVPPStopsTheForwarder(t *testing.T) {
	ctx, _, phases, vppPid := ownVPPForwarder(t)

	require.NoError(t, syscall.Kill(vppPid, syscall.SIGKILL))

	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the forwarder did not notice its VPP's crash within 2s")
	}
	cause := context.Cause(ctx)
	require.ErrorContains(t, cause, "VPP exited: signal: killed")
	require.False(t, errors.Is(cause, context.Canceled), "a crash is a failure, not a signal: the forwarder must exit non-zero")
	stopWithin(t, ctx, phases, 15*time.Second)
	require.True(t, gone(vppPid))
}
