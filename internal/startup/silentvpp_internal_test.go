package startup

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// silentVPP is a VPP that accepted the API connection and then never answers: every call waits
// until its context ends.
type silentVPP struct{}

func (silentVPP) NewStream(ctx context.Context, _ ...api.StreamOption) (api.Stream, error) {
	return &silentStream{ctx: ctx}, nil
}

func (silentVPP) Invoke(ctx context.Context, _, _ api.Message) error {
	<-ctx.Done()
	return ctx.Err()
}

func (silentVPP) WatchEvent(context.Context, api.Message) (api.Watcher, error) {
	return nil, errors.New("silent VPP sends no events")
}

type silentStream struct{ ctx context.Context }

func (s *silentStream) Context() context.Context  { return s.ctx }
func (s *silentStream) SendMsg(api.Message) error { return nil }
func (s *silentStream) Close() error              { return nil }

func (s *silentStream) RecvMsg() (api.Message, error) {
	<-s.ctx.Done()
	return nil, s.ctx.Err()
}

func connectSilent(external bool, conn api.Connection) VPPConnector {
	return func(context.Context, context.Context, string) (*vppconn.Connection, error) {
		return &vppconn.Connection{Connection: conn, External: external, Socket: "silent"}, nil
	}
}

// A VPP that never answers fails start-up within vppStartupBound, whichever phase waits on it: the
// clock check, the first to call VPP; past it (a VPP that tells its clock, then falls silent), the
// uplink init of a VPP the forwarder started, or the restore scan of an external VPP.
func TestVPPThatNeverAnswersFailsStartUpWithinItsBound(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	cfg, _ := forwarderEnv(t, domain, filepath.Join(t.TempDir(), "nsmgr.sock"), filepath.Join(t.TempDir(), "vpp-api.sock"))

	ownVPPNode := vppsimtest.NewNetns(t, netnsPrefix)
	ownVPPNode.MustDo(t, func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "fcs-up0"}, PeerName: "fcs-upp0"})
	})
	ownVPPNode.AddrAdd(t, "fcs-up0", "192.0.2.10/24")
	ownVPPConfig := *cfg
	ownVPPConfig.VppInit = vppinit.AfPacket
	ownVPPConfig.TunnelIP = net.ParseIP("192.0.2.10")

	clockOnly := clockedVPP{Connection: silentVPP{}, showClock: clockAt(1)}
	silentConfig := *cfg
	silentConfig.StateDir = t.TempDir()

	cases := []struct {
		name      string
		node      *vppsimtest.Netns
		cfg       *config.Config
		connect   VPPConnector
		waitingOn string
		saying    string
	}{
		{"own VPP", ownVPPNode, &ownVPPConfig, connectSilent(false, clockOnly), "hand the uplink to VPP", ""},
		{"external VPP", vppsimtest.NewNetns(t, netnsPrefix), cfg, connectSilent(true, clockOnly), "find what a previous run left", ""},
		{"VPP silent from the start", vppsimtest.NewNetns(t, netnsPrefix), &silentConfig, connectSilent(true, silentVPP{}),
			"check VPP's clock: VPP did not answer within 10s", `a VPP that misread its clock at start-up stops answering too (its log then repeats "Rejecting large frequency change")`},
	}
	type outcome struct {
		err     error
		elapsed time.Duration
	}
	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	outcomes := make([]chan outcome, len(cases))
	// All wait out the same bound side by side.
	for i, c := range cases {
		outcomes[i] = make(chan outcome, 1)
		go func() {
			var phases lifecycle.Lifecycle
			defer phases.Stop(ctx)
			began := time.Now()
			err := startIn(ctx, c.node, abort, c.cfg, &phases, c.connect)
			outcomes[i] <- outcome{err, time.Since(began)}
		}()
	}
	// Invoke waits at least NSM_VPP_MIN_OPERATION_TIMEOUT (extendtimeout) before the bound can end it.
	limit := vppStartupBound + cfg.VPPMinOperationTimeout + 3*time.Second
	for i, c := range cases {
		select {
		case got := <-outcomes[i]:
			require.ErrorContains(t, got.err, c.waitingOn, c.name)
			require.ErrorContains(t, got.err, c.saying, c.name)
			require.GreaterOrEqual(t, got.elapsed, vppStartupBound, "%s: start-up gave up before its bound: %v", c.name, got.err)
		case <-time.After(limit):
			t.Fatalf("%s: start-up still waiting on a silent VPP after %s", c.name, limit)
		}
	}
	require.NoError(t, ctx.Err(), "start-up failed by itself, not by a signal")
}
