package startup

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/vlib"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	simvpp "github.com/nsmfwd/forwarder-vpp/test/vppsim/vpp"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// clockedVPP passes every call on to its VPP but answers `show clock` itself.
type clockedVPP struct {
	api.Connection
	showClock func() string
}

func (c clockedVPP) Invoke(ctx context.Context, req, reply api.Message) error {
	if cli, ok := req.(*vlib.CliInband); ok && cli.Cmd == "show clock" {
		*reply.(*vlib.CliInbandReply) = vlib.CliInbandReply{Reply: c.showClock()}
		return nil
	}
	return c.Connection.Invoke(ctx, req, reply)
}

// withClock connects as connect does to a VPP that answers `show clock` with showClock.
func withClock(connect VPPConnector, showClock func() string) VPPConnector {
	return func(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error) {
		conn, err := connect(ctx, lifetime, socket)
		if err != nil {
			return nil, err
		}
		conn.Connection = clockedVPP{Connection: conn.Connection, showClock: showClock}
		return conn, nil
	}
}

// clockAt is `show clock` as VPP v24.10 answers it when its clock runs rate times the kernel's.
func clockAt(rate float64) func() string {
	started := time.Now()
	return func() string {
		return simvpp.ShowClock(time.Duration(rate*float64(time.Since(started))), time.Now())
	}
}

// misreadRate is a clock that misread a 1 ms estimate over a 1 s stall.
const misreadRate = 1000

// asOwnVPP connects to sim as to a VPP the forwarder started: the end of its lifetime ends sim, and
// closes Exited and ended.
func asOwnVPP(sim *vppsim.Sim) (connect VPPConnector, ended <-chan error) {
	exited := make(chan error)
	return func(ctx, lifetime context.Context, _ string) (*vppconn.Connection, error) {
		conn, err := vppconn.ConnectExisting(ctx, sim.APISocket(), 5*time.Second)
		if err != nil {
			return nil, err
		}
		go func() {
			<-lifetime.Done()
			conn.Close()
			_ = sim.Close()
			close(exited)
		}()
		conn.External, conn.Exited = false, exited
		return conn, nil
	}, exited
}

// startAndStop runs start-up with connect to the VPP at socket in a node of its own, then stops
// what started as the forwarder does on exit, and returns start-up's error. No registry answers:
// a start-up that passes VPP's phases waits for one until errStartUpGaveUp.
func startAndStop(t *testing.T, socket string, connect VPPConnector) error {
	t.Helper()
	cfg, _ := forwarderEnv(t, svidtest.NewTrustDomain(t, "test.nsm"), filepath.Join(t.TempDir(), "nsmgr.sock"), socket)
	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	ctx, cancel := context.WithTimeoutCause(ctx, 2*vppStartupBound, errStartUpGaveUp)
	defer cancel()
	var phases lifecycle.Lifecycle
	err := startIn(ctx, vppsimtest.NewNetns(t, netnsPrefix), abort, cfg, &phases, connect)
	stopWithin(t, ctx, &phases, 15*time.Second)
	return err
}

var errStartUpGaveUp = errors.New("start-up went past VPP's phases, waiting for the registry")

// requireMisclocked asserts that start-up failed at the clock check, saying how fast VPP's clock
// runs and that VPP must be restarted.
func requireMisclocked(t *testing.T, err error, fasterThan float64) {
	t.Helper()
	var misclocked *vppclock.Error
	require.ErrorAs(t, err, &misclocked)
	require.Greater(t, misclocked.Rate, fasterThan)
	require.ErrorContains(t, err, "check VPP's clock: ")
	require.ErrorContains(t, err, "must be restarted")
}

// A VPP the forwarder started whose clock runs fast fails start-up before anything is configured
// in it, and the forwarder ends it, so that the pod's restart starts a VPP that keeps time.
func TestOwnVPPWhoseClockRunsFastFailsStartUpAndEnds(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	connect, ended := asOwnVPP(sim)

	err := startAndStop(t, filepath.Join(t.TempDir(), "no-vpp-yet.sock"), withClock(connect, clockAt(misreadRate)))

	requireMisclocked(t, err, misreadRate/2)
	require.ErrorContains(t, err, "the forwarder stops the VPP it started")
	require.Empty(t, sim.Requests(), "nothing was configured in VPP")
	select {
	case <-ended:
	default:
		t.Fatal("the forwarder's VPP still runs after its failed start-up")
	}
}

// An external VPP whose clock runs fast fails start-up too, naming the VPP its operator must
// restart; the forwarder releases its API connection and leaves that VPP running.
func TestExternalVPPWhoseClockRunsFastFailsStartUpAndRuns(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")

	err := startAndStop(t, sim.APISocket(), withClock(ConnectVPP, clockAt(misreadRate)))

	requireMisclocked(t, err, misreadRate/2)
	require.ErrorContains(t, err, "external VPP at "+sim.APISocket())
	require.ErrorContains(t, err, "restart that VPP")
	require.Empty(t, sim.Requests(), "nothing was configured in VPP")
	require.Eventually(t, func() bool { return len(sim.Snapshot().Clients) == 0 }, 5*time.Second, 20*time.Millisecond,
		"the VPP API connection is released")
	vppsimtest.Dial(t, sim) // still runs
}

// A VPP whose answer to `show clock` holds no time (another CLI than v24.10's) is not refused for
// it: the forwarder warns and starts.
func TestVPPWhoseClockCannotBeReadStillServes(t *testing.T) {
	f := newSimForwarder(t, svidtest.NewTrustDomain(t, "test.nsm"), netnsPrefix)
	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	ctx, logged := captureLog(t, ctx)
	var phases lifecycle.Lifecycle
	defer func() { abort(context.Canceled); stopWithin(t, ctx, &phases, 15*time.Second) }()
	unknownCommand := func() string { return "show: unknown input `clock'\n" }

	require.NoError(t, startIn(ctx, f.node, abort, f.cfg, &phases, withClock(ConnectVPP, unknownCommand)))

	require.Contains(t, loggedMessages(logged),
		"VPP's clock is not checked: reading VPP's clock: no \"Time now\" in VPP's answer to show clock: \"show: unknown input `clock'\\n\"")
	registered, _ := f.registry.Snapshot()
	require.NotEmpty(t, registered, "the forwarder registered")
}

// On real VPP: a VPP that misread its clock at start-up (realvpp.MisclockingBinary), kept as it
// is, fails the forwarder's start-up with the clock's error rather than a later timeout.
func TestRealVPPThatMisreadItsClockFailsStartUp(t *testing.T) {
	vpp := answeringMisclockedVPP(t)

	err := startAndStop(t, vpp.APISocket(), ConnectVPP)

	t.Logf("the forwarder's start-up: %v", err)
	requireMisclocked(t, err, 10)
	require.ErrorContains(t, err, "restart that VPP")
}

// answeringMisclockedVPP runs real VPPs that misread their clock, at most realvpp.ClockAttempts,
// until one still answers its first client with its clock. Some answer nobody (one of the 16 runs
// made while writing this test, and a clean-clone `make test` on 2 Dec 2026: "vpp did not answer
// ... within 30s"), and some answer without their clock: the forwarder then fails as on any VPP
// that does not answer (TestVPPThatNeverAnswersFailsStartUpWithinItsBound), so such a VPP is not
// the one this test asks about, and the next one is tried.
func answeringMisclockedVPP(t *testing.T) *realvpp.VPP {
	t.Helper()
	binary := realvpp.MisclockingBinary(t, realvpp.Require(t), realvpp.ClockAttempts)
	for range realvpp.ClockAttempts {
		vpp, err := realvpp.TryStartForTest(t, realvpp.Options{Binary: binary, KeepMisclocked: true})
		if err != nil {
			t.Logf("a VPP that misread its clock did not start: %v", err)
			continue
		}
		require.Error(t, vpp.Misclocked, "VPP kept its clock through strace's stall")
		var misclocked *vppclock.Error
		if errors.As(vpp.Misclocked, &misclocked) {
			return vpp
		}
		require.NoError(t, vpp.Stop())
	}
	t.Fatalf("none of %d VPPs that misread their clock answered", realvpp.ClockAttempts)
	return nil
}
