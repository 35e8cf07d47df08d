package startup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/cleanup"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/vpphelper/extendtimeout"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/internal/registry/registration"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/telemetry"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/serve"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/eagerstream"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// Shutdown bounds: each step gets this long before the next one runs anyway. Their sum stays
// under Kubernetes' default 30 s termination grace period, so the forwarder is never SIGKILLed
// in the middle of releasing what it holds.
const (
	unregisterBound    = 3 * time.Second // one registry round trip
	serverGrace        = 2 * time.Second // in-flight Requests finish; monitor streams are cut after it
	serverStopBound    = serverGrace + time.Second
	cleanupBound       = 15 * time.Second // every live connection closes its VPP and kernel resources
	identityCloseBound = 2 * time.Second
	vppReleaseBound    = 3 * time.Second
	journalCloseBound  = time.Second
	telemetryBound     = 2 * time.Second // exporters flush their last batch

	// vppStartupBound caps each start-up phase that waits on VPP's answers. A VPP that accepted
	// the connection but never answers must fail start-up, so that the pod restarts, rather than
	// leave a forwarder that never serves; a healthy VPP answers these few calls in milliseconds.
	vppStartupBound = 10 * time.Second
)

// VPPConnector connects to VPP; a VPP the forwarder starts lives until lifetime ends.
type VPPConnector func(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error)

// ConnectVPP connects to the VPP at socket, or starts one there.
func ConnectVPP(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error) {
	return vppconn.Connect(ctx, socket, vppconn.WithLifetime(lifetime))
}

// forwarder carries what one start-up phase hands to the next. Each phase registers how to
// undo itself with phases, so a failed start-up and a shutdown release the same things.
type forwarder struct {
	ctx     context.Context
	abort   context.CancelCauseFunc
	cfg     *config.Config
	phases  *lifecycle.Lifecycle
	connect VPPConnector

	vpp         *vppconn.Connection
	vppAPI      api.Connection
	tunnelIP    net.IP
	connections *journal.Journal
	leftovers   *restore.Leftovers
	releaser    *restore.Releaser
	// vppEnded is set once the VPP the forwarder started has ended.
	vppEnded    atomic.Bool
	identity    *svid.Source
	descriptors fdtransport.Option // the caps on descriptors held, shared by the server and the dials
	dialOptions []grpc.DialOption
	server      *grpc.Server
}

// Start runs the start-up phases in order; what started is stopped by phases.Stop.
func Start(ctx context.Context, abort context.CancelCauseFunc, cfg *config.Config, phases *lifecycle.Lifecycle, connect VPPConnector) error {
	f := &forwarder{ctx: ctx, abort: abort, cfg: cfg, phases: phases, connect: connect}
	steps := []struct {
		name string
		run  func() error
	}{
		{"telemetry", f.startTelemetry},
		{"connect to VPP", f.connectToVPP},
		{"check VPP's clock", f.checkVPPClock},
		{"hand the uplink to VPP", f.initUplink},
		{"open the connection journal", f.openJournal},
		{"find what a previous run left in VPP and the kernel", f.findLeftovers},
		{"retrieve the SVID (check the spire agent if this is the last phase logged)", f.fetchIdentity},
		{"build the forwarding endpoint", f.buildEndpoint},
		{"serve on " + cfg.ListenOn.String(), f.serve},
		{"register with " + cfg.ConnectTo.String(), f.register},
	}
	logger := log.FromContext(ctx)
	for _, variable := range cfg.IgnoredSRIOV {
		logger.Warnf("%s is set, but SR-IOV is not supported by forwarder-vpp: the variable is ignored", variable)
	}
	logger.Infof("there are %d phases which will be executed followed by a success message:", len(steps))
	for i, step := range steps {
		logger.Infof("%d: %s", i+1, step.name)
	}
	for _, step := range steps {
		if err := phases.Run(ctx, step.name, step.run); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	logger.Infof("startup completed in %s", phases.SinceStart())
	logger.Info("forwarder-vpp is ready")
	return nil
}

func (f *forwarder) startTelemetry() error {
	closer := telemetry.Start(f.ctx, func() { f.abort(errors.New("metrics server could not bind")) }, f.cfg)
	f.phases.OnStop("flush telemetry", telemetryBound, func(context.Context) error { return closer.Close() })
	return nil
}

func (f *forwarder) connectToVPP() (err error) {
	vppCtx, stopVPP := context.WithCancel(context.WithoutCancel(f.ctx))
	if f.vpp, err = f.connect(f.ctx, vppCtx, f.cfg.VppAPISocket); err != nil {
		stopVPP()
		return err
	}
	f.phases.OnStop("release VPP", vppReleaseBound, func(stopCtx context.Context) error {
		f.vpp.Close()
		stopVPP()
		return waitForVPPEnd(stopCtx, f.vpp.Exited)
	})
	go abortWhenVPPExits(f.vpp.Exited, &f.vppEnded, f.abort)
	go abortWhenVPPLost(f.vpp.Lost, f.abort)
	// Every dump is read off govpp at once: one read slowly (sdk-vpp's MTU lookups call VPP between
	// its details) would otherwise stall the whole connection once VPP holds 100 interfaces.
	f.vppAPI = extendtimeout.NewConnection(eagerstream.NewConnection(f.vpp), f.cfg.VPPMinOperationTimeout)
	return nil
}

// checkVPPClock refuses a VPP whose clock runs off the kernel's pace: one that misread its CPU
// clock at start-up stops answering new API clients within seconds and must be started again
// (vppclock). A VPP whose answer holds no time (a CLI other than v24.10's) is used with a warning:
// the check cannot tell, and refusing would stop a forwarder that may well work.
func (f *forwarder) checkVPPClock() error {
	checkCtx, cancel := context.WithTimeout(f.ctx, vppStartupBound)
	defer cancel()
	err := vppclock.Check(checkCtx, f.vppAPI)
	var misclocked *vppclock.Error
	switch {
	case errors.As(err, &misclocked) && f.vpp.External:
		return fmt.Errorf("external VPP at %s: %w; restart that VPP (the forwarder refuses it until then)", f.vpp.Socket, err)
	case errors.As(err, &misclocked):
		return fmt.Errorf("%w; the forwarder stops the VPP it started, so that its restart starts another", err)
	case errors.Is(err, vppclock.ErrUnreadable):
		log.FromContext(f.ctx).Warnf("VPP's clock is not checked: %v", err)
		return nil
	case err != nil && errors.Is(checkCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("VPP did not answer within %s: %w; a VPP that misread its clock at start-up stops answering too (its log then repeats %q)",
			vppStartupBound, err, "Rejecting large frequency change")
	}
	return err
}

func (f *forwarder) initUplink() (err error) {
	initCtx, cancel := context.WithTimeout(f.ctx, vppStartupBound)
	defer cancel()
	mode := f.cfg.VppInit
	if f.vpp.External && mode != vppinit.None {
		log.FromContext(f.ctx).Infof("external VPP at %s owns its uplink: NSM_VPP_INIT=%s is overridden to NONE", f.vpp.Socket, mode)
		mode = vppinit.None
	}
	f.tunnelIP, err = vppinit.Run(initCtx, f.vppAPI, mode, f.cfg.TunnelIP, vppinit.WithParams(f.cfg.InitParams),
		vppinit.WithVlanDevices(slices.Collect(maps.Values(f.cfg.VlanDomainToDevice))...))
	log.FromContext(f.ctx).Infof("tunnel IP: %v", f.tunnelIP)
	return err
}

func (f *forwarder) openJournal() (err error) {
	// One journal per forwarder name, locked while it runs. A DaemonSet names each pod anew, so the
	// journals of replaced pods (same service, same VPP) are adopted when their lock is free.
	siblings := journal.AdoptSiblings(fmt.Sprintf("service=%s vpp=%s", f.cfg.NSName, f.cfg.VppAPISocket))
	// A read-only or full directory does not stop the forwarder (journal.Open): it serves with
	// restart recovery off until the directory takes writes.
	journalCtx := log.WithLog(f.ctx, stateDirLogger{Logger: log.FromContext(f.ctx), stateDir: f.cfg.StateDir})
	if f.connections, err = journal.Open(journalCtx, filepath.Join(f.cfg.StateDir, f.cfg.Name), siblings); err != nil {
		return fmt.Errorf("NSM_STATE_DIR=%s: %w", f.cfg.StateDir, err)
	}
	f.phases.OnStop("close the connection journal", journalCloseBound, func(context.Context) error { return f.connections.Close() })
	return nil
}

// stateDirLogger names NSM_STATE_DIR in the journal's errors, the variable an operator fixes.
type stateDirLogger struct {
	log.Logger
	stateDir string
}

func (l stateDirLogger) Errorf(format string, v ...interface{}) {
	l.Logger.Errorf("NSM_STATE_DIR=%s: "+format, append([]interface{}{l.stateDir}, v...)...)
}

func (f *forwarder) findLeftovers() (err error) {
	scanCtx, cancel := context.WithTimeout(f.ctx, vppStartupBound)
	defer cancel()
	// Bound to the namespace start-up runs in, the forwarder's: veth ends are looked up there
	// whichever thread releases them later.
	forwarderNetns, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	f.phases.OnStop("close the netlink handle", journalCloseBound, func(context.Context) error { forwarderNetns.Close(); return nil })
	f.releaser = restore.NewReleaser(f.vppAPI, markedroutes.NewServer(), restore.WithForwarderNetns(forwarderNetns),
		restore.WithVPPEnded(f.vppEnded.Load))
	kernelTaps := f.cfg.KernelInterfaceType.Resolve() == kernelif.Tap
	if f.leftovers, err = restore.Scan(scanCtx, f.releaser, f.connections, kernelTaps); err != nil {
		return err
	}
	// A live connection is refreshed well within its token lifetime; one that is not
	// requested again by then is dead.
	f.leftovers.ExpireAfter(f.ctx, f.cfg.MaxTokenLifetime)
	log.FromContext(f.ctx).Infof("connections with leftovers from a previous run: %v", f.leftovers.Owners())
	return nil
}

func (f *forwarder) fetchIdentity() (err error) {
	if f.identity, err = svid.Fetch(f.ctx, svid.DefaultTimeout); err != nil {
		return err
	}
	f.phases.OnStop("close the SVID source", identityCloseBound, func(context.Context) error { return f.identity.Close() })
	f.descriptors = fdtransport.WithBudget(fdtransport.NewBudget(f.cfg.MaxHeldDescriptorsPerPeer, f.cfg.MaxHeldDescriptors))
	f.dialOptions = grpctransport.DialOptions(f.identity, grpctransport.TokenGenerator(f.identity, f.cfg.MaxTokenLifetime), grpctransport.DefaultKeepalive, f.descriptors)
	return nil
}

func (f *forwarder) buildEndpoint() error {
	cfg := f.cfg
	endpointCtx, closeConnections := context.WithCancel(context.WithoutCancel(f.ctx))
	cleanupDone := make(chan struct{})
	authorizeServer, authorizeMonitor := authorizeServers()
	endpoint, err := xconnect.NewServer(endpointCtx, grpctransport.TokenGenerator(f.identity, cfg.MaxTokenLifetime), f.vppAPI, f.tunnelIP,
		xconnect.WithName(cfg.Name),
		xconnect.WithLeftovers(f.leftovers),
		xconnect.WithJournal(f.connections, f.releaser.Release),
		// A failed release at expiry is retried until the journal no longer holds the connection.
		xconnect.WithExpiryOptions(expiry.WithReleased(func(id string) bool { return f.connections.Lookup(id) == nil })),
		xconnect.WithMetricsOptions(metrics.WithSocket(f.vpp.StatsSocket())),
		xconnect.WithAuthorizeServer(authorizeServer),
		xconnect.WithAuthorizeMonitorConnectionServer(authorizeMonitor),
		xconnect.WithClientURL(&cfg.ConnectTo),
		xconnect.WithDialTimeout(cfg.DialTimeout),
		xconnect.WithDialOptions(f.dialOptions...),
		xconnect.WithVlanDomainToDevice(cfg.VlanDomainToDevice),
		xconnect.WithMechanismPriority(cfg.MechanismPriority),
		xconnect.WithCleanupOptions(cleanup.WithoutGRPCCall(), cleanup.WithDoneChan(cleanupDone)),
		xconnect.WithVxlanOptions(vxlan.WithPort(cfg.VxlanPort)),
		xconnect.WithKernelInterface(cfg.KernelInterfaceType),
		xconnect.WithRequestCheckOptions(requestcheck.WithLimits(cfg.RequestLimits.Limits())),
	)
	if err != nil {
		closeConnections()
		return err
	}
	f.phases.OnStop("close live connections", cleanupBound, func(stopCtx context.Context) error {
		closeConnections()
		select {
		case <-cleanupDone:
			return nil
		case <-stopCtx.Done():
			return stopCtx.Err()
		}
	})
	f.server = grpc.NewServer(grpctransport.ServerOptions(f.identity, grpctransport.DefaultKeepalive, f.descriptors)...)
	endpoint.Register(f.server)
	return nil
}

func (f *forwarder) serve() error {
	running, err := serve.Start(&f.cfg.ListenOn, f.server)
	if err != nil {
		return err
	}
	f.phases.OnStop("stop accepting requests", serverStopBound, func(context.Context) error { running.Stop(serverGrace); return nil })
	go abortOnServeError(running.Errors, f.abort)
	return nil
}

func (f *forwarder) register() error {
	cfg := f.cfg
	registered, err := registration.Register(f.ctx, &cfg.ConnectTo, registration.Endpoint{
		Name: cfg.Name, ServiceName: cfg.NSName, Labels: cfg.Labels, URL: &cfg.ListenOn,
	}, cfg.RegistryClientPolicies, cfg.DialTimeout, f.dialOptions...)
	if err != nil {
		return err
	}
	f.phases.OnStop("unregister", unregisterBound, registered.Unregister)
	return nil
}

// waitForVPPEnd waits until a VPP the forwarder started has ended (its lifetime's end kills it,
// but asynchronously): the forwarder must not exit before its VPP, which would then run on
// without it. Nothing to wait for with an external VPP.
func waitForVPPEnd(ctx context.Context, exited <-chan error) error {
	if exited == nil {
		return nil
	}
	for {
		select {
		case _, open := <-exited:
			if !open {
				return nil
			}
		case <-ctx.Done():
			return errors.New("VPP has not ended")
		}
	}
}

func abortWhenVPPExits(exited <-chan error, ended *atomic.Bool, abort context.CancelCauseFunc) {
	if exited == nil {
		return
	}
	// A clean exit closes the channel without an error: it is still the end of the data plane.
	err := <-exited
	ended.Store(true) // before the shutdown the abort starts, whose Closes release through it
	if err != nil {
		abort(fmt.Errorf("VPP exited: %w", err))
	} else {
		abort(errors.New("VPP exited"))
	}
}

// abortWhenVPPLost stops a forwarder whose API connection broke: every later call would fail, and
// the restart (the DaemonSet's) reconnects and adopts what VPP still holds. Unlike an exit, VPP
// may still run with every interface.
func abortWhenVPPLost(lost <-chan error, abort context.CancelCauseFunc) {
	if lost == nil {
		return
	}
	if err, ok := <-lost; ok {
		abort(fmt.Errorf("VPP API connection lost: %w", err))
	}
}

func abortOnServeError(errs <-chan error, abort context.CancelCauseFunc) {
	if err, ok := <-errs; ok && err != nil {
		abort(fmt.Errorf("serving: %w", err))
	}
}
