// Command forwarder-vpp is a Network Service Mesh forwarder that drives VPP through govpp: a
// drop-in for the stock cmd-forwarder-vpp (same NSM_* variables), minus SR-IOV.
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	nested "github.com/antonfisher/nested-logrus-formatter"
	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/cleanup"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"
	"github.com/networkservicemesh/vpphelper/extendtimeout"

	"github.com/nsmfwd/forwarder-vpp/internal/authz"
	"github.com/nsmfwd/forwarder-vpp/internal/config"
	"github.com/nsmfwd/forwarder-vpp/internal/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/registration"
	"github.com/nsmfwd/forwarder-vpp/internal/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/serve"
	"github.com/nsmfwd/forwarder-vpp/internal/svid"
	"github.com/nsmfwd/forwarder-vpp/internal/telemetry"
	"github.com/nsmfwd/forwarder-vpp/internal/vppconn"
	"github.com/nsmfwd/forwarder-vpp/internal/vppinit"
	"github.com/nsmfwd/forwarder-vpp/internal/xconnect"
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
	telemetryBound     = 2 * time.Second // exporters flush their last batch

	// vppStartupBound caps each start-up phase that waits on VPP's answers. A VPP that accepted
	// the connection but never answers must fail start-up, so that the pod restarts, rather than
	// leave a forwarder that never serves; a healthy VPP answers these few calls in milliseconds.
	vppStartupBound = 10 * time.Second

	exitCodeFailure  = 1
	exitCodeBadUsage = 2
)

func main() {
	os.Exit(run())
}

func run() int {
	if wantsHelp(os.Args[1:]) {
		_ = config.PrintUsage(os.Stdout)
		return 0
	}
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "forwarder-vpp: unexpected argument %q: configuration is read from NSM_* variables (see -h)\n", os.Args[1])
		return exitCodeBadUsage
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "forwarder-vpp: %v\n", err)
		return exitCodeFailure
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stopSignals()
	ctx, abort := context.WithCancelCause(ctx)
	ctx = withLogger(ctx, cfg)
	logger := log.FromContext(ctx)
	logger.Infof("configuration: %s", cfg)

	var phases lifecycle.Lifecycle
	failure := start(ctx, abort, cfg, &phases, connectVPP)
	if failure == nil {
		<-ctx.Done()
		failure = context.Cause(ctx)
	}
	phases.Stop(ctx)
	// A signal cancels ctx with context.Canceled as its cause; every other cause is a failure.
	if signalled := errors.Is(context.Cause(ctx), context.Canceled); failure != nil && !signalled {
		logger.Errorf("forwarder-vpp stopped: %v", failure)
		return exitCodeFailure
	}
	logger.Info("forwarder-vpp stopped")
	return 0
}

// vppConnector connects to VPP; a VPP the forwarder starts lives until lifetime ends.
type vppConnector func(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error)

func connectVPP(ctx, lifetime context.Context, socket string) (*vppconn.Connection, error) {
	return vppconn.Connect(ctx, socket, vppconn.WithLifetime(lifetime))
}

// start runs the start-up phases; what started is stopped by phases.Stop.
func start(ctx context.Context, abort context.CancelCauseFunc, cfg *config.Config, phases *lifecycle.Lifecycle, connect vppConnector) error {
	var (
		vpp         *vppconn.Connection
		vppAPI      api.Connection
		tunnelIP    net.IP
		identity    *svid.Source
		dialOptions []grpc.DialOption
		server      *grpc.Server
		leftovers   *restore.Leftovers
		connections *journal.Journal
	)
	steps := []struct {
		name string
		run  func() error
	}{
		{"telemetry", func() error {
			closer := telemetry.Start(ctx, func() { abort(errors.New("metrics server could not bind")) }, cfg)
			phases.OnStop("flush telemetry", telemetryBound, func(context.Context) error { return closer.Close() })
			return nil
		}},
		{"connect to VPP", func() (err error) {
			vppCtx, stopVPP := context.WithCancel(context.WithoutCancel(ctx))
			if vpp, err = connect(ctx, vppCtx, cfg.VppAPISocket); err != nil {
				stopVPP()
				return err
			}
			phases.OnStop("release VPP", vppReleaseBound, func(context.Context) error { vpp.Close(); stopVPP(); return nil })
			go abortWhenVPPExits(vpp.Exited, abort)
			vppAPI = extendtimeout.NewConnection(vpp, cfg.VPPMinOperationTimeout)
			return nil
		}},
		{"hand the uplink to VPP", func() (err error) {
			initCtx, cancel := context.WithTimeout(ctx, vppStartupBound)
			defer cancel()
			mode := cfg.VppInit
			if vpp.External && mode != vppinit.None {
				log.FromContext(ctx).Infof("external VPP at %s owns its uplink: NSM_VPP_INIT=%s is overridden to NONE", vpp.Socket, mode)
				mode = vppinit.None
			}
			tunnelIP, err = vppinit.Run(initCtx, vppAPI, mode, cfg.TunnelIP, vppinit.WithParams(cfg.InitParams),
				vppinit.WithVlanDevices(slices.Collect(maps.Values(cfg.VlanDomainToDevice))...))
			log.FromContext(ctx).Infof("tunnel IP: %v", tunnelIP)
			return err
		}},
		{"open the connection journal", func() (err error) {
			// One journal per forwarder: several forwarders on a host must never share one.
			if connections, err = journal.Open(ctx, filepath.Join(cfg.StateDir, cfg.Name)); err != nil {
				return fmt.Errorf("NSM_STATE_DIR=%s: %w", cfg.StateDir, err)
			}
			return nil
		}},
		{"find what a previous run left in VPP and the kernel", func() (err error) {
			scanCtx, cancel := context.WithTimeout(ctx, vppStartupBound)
			defer cancel()
			if leftovers, err = restore.Scan(scanCtx, vppAPI, restore.WithJournal(connections, restore.NewKernelCleanupServer())); err != nil {
				return err
			}
			// A live connection is refreshed well within its token lifetime; one that is not
			// requested again by then is dead.
			leftovers.ExpireAfter(ctx, cfg.MaxTokenLifetime)
			log.FromContext(ctx).Infof("connections with leftovers from a previous run: %v", leftovers.Owners())
			return nil
		}},
		{"retrieve the SVID (check the spire agent if this is the last phase logged)", func() (err error) {
			if identity, err = svid.Fetch(ctx, svid.DefaultTimeout); err != nil {
				return err
			}
			phases.OnStop("close the SVID source", identityCloseBound, func(context.Context) error { return identity.Close() })
			dialOptions = grpctransport.DialOptions(identity, grpctransport.TokenGenerator(identity, cfg.MaxTokenLifetime), grpctransport.DefaultKeepalive)
			return nil
		}},
		{"build the forwarding endpoint", func() error {
			endpointCtx, closeConnections := context.WithCancel(context.WithoutCancel(ctx))
			cleanupDone := make(chan struct{})
			authorizeServer, authorizeMonitor := authz.Servers()
			endpoint, err := xconnect.NewServer(endpointCtx, grpctransport.TokenGenerator(identity, cfg.MaxTokenLifetime), vppAPI, tunnelIP,
				xconnect.WithName(cfg.Name),
				xconnect.WithLeftovers(leftovers),
				xconnect.WithJournal(connections),
				xconnect.WithMetricsOptions(metrics.WithSocket(vpp.StatsSocket())),
				xconnect.WithAuthorizeServer(authorizeServer),
				xconnect.WithAuthorizeMonitorConnectionServer(authorizeMonitor),
				xconnect.WithClientURL(&cfg.ConnectTo),
				xconnect.WithDialTimeout(cfg.DialTimeout),
				xconnect.WithDialOptions(dialOptions...),
				xconnect.WithVlanDomainToDevice(cfg.VlanDomainToDevice),
				xconnect.WithMechanismPriority(cfg.MechanismPriority),
				xconnect.WithCleanupOptions(cleanup.WithoutGRPCCall(), cleanup.WithDoneChan(cleanupDone)),
				xconnect.WithVxlanOptions(vxlan.WithPort(cfg.VxlanPort)),
				xconnect.WithKernelInterface(cfg.KernelInterfaceType),
			)
			if err != nil {
				closeConnections()
				return err
			}
			phases.OnStop("close live connections", cleanupBound, func(stopCtx context.Context) error {
				closeConnections()
				select {
				case <-cleanupDone:
					return nil
				case <-stopCtx.Done():
					return stopCtx.Err()
				}
			})
			server = grpc.NewServer(grpctransport.ServerOptions(identity, grpctransport.DefaultKeepalive)...)
			endpoint.Register(server)
			return nil
		}},
		{"serve on " + cfg.ListenOn.String(), func() error {
			running, err := serve.Start(&cfg.ListenOn, server)
			if err != nil {
				return err
			}
			phases.OnStop("stop accepting requests", serverStopBound, func(context.Context) error { running.Stop(serverGrace); return nil })
			go abortOnServeError(running.Errors, abort)
			return nil
		}},
		{"register with " + cfg.ConnectTo.String(), func() error {
			registered, err := registration.Register(ctx, &cfg.ConnectTo, registration.Endpoint{
				Name: cfg.Name, ServiceName: cfg.NSName, Labels: cfg.Labels, URL: &cfg.ListenOn,
			}, cfg.RegistryClientPolicies, cfg.DialTimeout, dialOptions...)
			if err != nil {
				return err
			}
			phases.OnStop("unregister", unregisterBound, registered.Unregister)
			return nil
		}},
	}
	for _, step := range steps {
		if err := phases.Run(ctx, step.name, step.run); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	log.FromContext(ctx).Info("forwarder-vpp is ready")
	return nil
}

func wantsHelp(args []string) bool {
	for _, arg := range args {
		switch arg {
		case "-h", "-help", "--help", "help":
			return true
		}
	}
	return false
}

func withLogger(ctx context.Context, cfg *config.Config) context.Context {
	logrus.SetFormatter(&nested.Formatter{})
	level, _ := logrus.ParseLevel(cfg.LogLevel) // validated by config.Load
	logrus.SetLevel(level)
	// The sdk's chain tracing decides per message from the log level; with tracing off its
	// DEBUG path dereferences a tracer it never built, so it stays on as in the stock commands.
	log.EnableTracing(true)
	return log.WithLog(ctx, logruslogger.New(ctx, map[string]interface{}{"cmd": "forwarder-vpp"}))
}

func abortWhenVPPExits(exited <-chan error, abort context.CancelCauseFunc) {
	if exited == nil {
		return
	}
	// A clean exit closes the channel without an error: it is still the end of the data plane.
	if err := <-exited; err != nil {
		abort(fmt.Errorf("VPP exited: %w", err))
	} else {
		abort(errors.New("VPP exited"))
	}
}

func abortOnServeError(errs <-chan error, abort context.CancelCauseFunc) {
	if err, ok := <-errs; ok && err != nil {
		abort(fmt.Errorf("serving: %w", err))
	}
}
