//go:build linux

// Command stockforwarder is the stock NSM forwarder, cmd-forwarder-vpp v1.18.0, composed again
// from the libraries it is built from, so that the end-to-end harness can run every scenario
// against the stock behaviour (`make compare`). The real stock binary cannot be built here: its
// SR-IOV half needs sdk-k8s, which the module proxy does not serve.
//
// What is the same as the stock binary: the same modules at the same versions (sdk, sdk-vpp,
// sdk-kernel v1.18.0, vpphelper, govpp); the same forwarding chain, sdk-vpp's
// chains/forwarder.NewServer with the options stock passes it (name, authorize servers sharing
// one SPIFFE ID map, client URL, dial timeout, mechanism priority, cleanup and metrics options
// for an external VPP, vxlan port, dial options); the same dial options (tracing, block,
// wait-for-ready, per-RPC JWT tokens, grpcfd over mTLS, no keepalive) and server options; the
// same start-up order and log lines (phases 1, 2, 6, 7, 8, 9, then "Startup completed in"); the
// same registration (sendfd, registry client policies, no unregistering on exit); the same
// NSM_* variables with the same defaults and parsing; the same shutdown (wait for the server,
// then for the cleanup of every connection). The kernel mechanism chooses tap when
// /dev/vhost-net exists and veth otherwise, inside sdk-vpp, as in stock.
//
// How it differs from the real stock binary:
//   - No SR-IOV. Stock skips its SR-IOV phases (3-5) when NSM_SRIOV_CONFIG_FILE is empty, and
//     its internal xconnectns package is then exactly sdk-vpp's forwarder chain, which is called
//     here directly; the SR-IOV variables are not read.
//   - External VPP only. Stock starts VPP itself when NSM_VPP_API_SOCKET does not exist and
//     hands the uplink to it with its internal vppinit package (AF_PACKET or AF_XDP); this
//     command exits with an error instead. With an external VPP, stock forces NSM_VPP_INIT to
//     NONE, as here; NSM_VPP_INIT is still parsed as stock parses it.
//   - NSM_DEVICE_SELECTOR_FILE (vlan devices) is parsed by this project's devicecfg (stock's
//     format), and the devices are handed to VPP as stock's vppinit.InitLinks does, one after
//     another instead of concurrently (vlandevices.go).
//   - No debug.Self (attaching dlv when DLV_LISTEN_FORWARDER is set).
//
// The start-up sequence follows cmd-forwarder-vpp's main.go (Copyright (c) 2020-2025 Cisco
// and/or its affiliates, Copyright (c) 2025 Nordix Foundation, Apache License 2.0).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	nested "github.com/antonfisher/nested-logrus-formatter"
	"github.com/edwarnicke/genericsync"
	"github.com/edwarnicke/grpcfd"
	"github.com/sirupsen/logrus"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/workloadapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	vppforwarder "github.com/networkservicemesh/sdk-vpp/pkg/networkservice/chains/forwarder"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/cleanup"
	registryclient "github.com/networkservicemesh/sdk/pkg/registry/chains/client"
	registryauthorize "github.com/networkservicemesh/sdk/pkg/registry/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"
	authmonitor "github.com/networkservicemesh/sdk/pkg/tools/monitorconnection/authorize"
	"github.com/networkservicemesh/sdk/pkg/tools/opentelemetry"
	"github.com/networkservicemesh/sdk/pkg/tools/pprofutils"
	"github.com/networkservicemesh/sdk/pkg/tools/prometheus"
	"github.com/networkservicemesh/sdk/pkg/tools/spiffejwt"
	"github.com/networkservicemesh/sdk/pkg/tools/token"
	"github.com/networkservicemesh/sdk/pkg/tools/tracing"
	"github.com/networkservicemesh/vpphelper"
	"github.com/networkservicemesh/vpphelper/extendtimeout"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGQUIT)
	defer cancel()
	logrus.SetFormatter(&nested.Formatter{})
	ctx = log.WithLog(ctx, logruslogger.New(ctx, map[string]interface{}{"cmd": os.Args[0]}))
	logger := log.FromContext(ctx)
	start := time.Now()

	logger.Infof("executing phase 1: get config from environment (time since start: %s)", time.Since(start))
	cfg := new(config)
	if err := cfg.process(); err != nil {
		logrus.Fatal(err)
	}
	logger.Infof("Config: %#v", cfg)
	level, err := logrus.ParseLevel(cfg.LogLevel)
	if err != nil {
		logrus.Fatalf("invalid log level %s", cfg.LogLevel)
	}
	logrus.SetLevel(level)
	log.EnableTracing(true)
	logruslogger.SetupLevelChangeOnSignal(ctx, map[os.Signal]logrus.Level{syscall.SIGUSR1: logrus.TraceLevel, syscall.SIGUSR2: level})
	startObservability(ctx, cancel, cfg)

	logger.Infof("executing phase 2: run vpp and get a connection to it (time since start: %s)", time.Since(start))
	if info, statErr := os.Stat(cfg.VppAPISocket); statErr != nil || info.IsDir() {
		logger.Fatalf("no external VPP at NSM_VPP_API_SOCKET=%q: starting VPP and handing it the uplink (NSM_VPP_INIT=%s) is not reproduced by this stock-equivalent forwarder", cfg.VppAPISocket, cfg.VppInit)
	}
	vppConn := vpphelper.DialContext(ctx, cfg.VppAPISocket)
	metricsOpts := []metrics.Option{metrics.WithSocket(filepath.Join(filepath.Dir(cfg.VppAPISocket), "stats.sock"))}
	cleanupDone := make(chan struct{})
	cleanupOpts := []cleanup.Option{cleanup.WithoutGRPCCall(), cleanup.WithDoneChan(cleanupDone)}
	logger.Info("external vpp is being used")
	cfg.VppInit = vppInitNone
	vppAPI := extendtimeout.NewConnection(vppConn, cfg.VPPMinOperationTimeout)
	logger.Warn("SR-IOV is not enabled")
	vlanDevices := deviceMap(ctx, cfg.DeviceSelectorFile)
	initVlanDevices(ctx, vppConn, vlanDevices, cfg.TunnelIP)

	logger.Infof("executing phase 6: retrieving svid, check spire agent logs if this is the last line you see (time since start: %s)", time.Since(start))
	source, err := workloadapi.NewX509Source(ctx)
	if err != nil {
		logrus.Fatalf("error getting x509 source: %+v", err)
	}
	svid, err := source.GetX509SVID()
	if err != nil {
		logrus.Fatalf("error getting x509 svid: %+v", err)
	}
	logrus.Infof("SVID: %q", svid.ID)

	logger.Infof("executing phase 7: create xconnect network service endpoint (time since start: %s)", time.Since(start))
	tokens := spiffejwt.TokenGeneratorFunc(source, cfg.MaxTokenLifetime)
	dialOptions := stockDialOptions(source, tokens)
	connectionsByPeer := genericsync.Map[spiffeid.ID, *genericsync.Map[string, struct{}]]{}
	// With the uplink left to the external VPP (NONE), stock's vppinit hands the tunnel IP on as
	// configured.
	endpoint := vppforwarder.NewServer(ctx, tokens, vppAPI, cfg.TunnelIP,
		vppforwarder.WithName(cfg.Name),
		vppforwarder.WithAuthorizeServer(authorize.NewServer(authorize.WithSpiffeIDConnectionMap(&connectionsByPeer))),
		vppforwarder.WithAuthorizeMonitorConnectionServer(authmonitor.NewMonitorConnectionServer(authmonitor.WithSpiffeIDConnectionMap(&connectionsByPeer))),
		vppforwarder.WithVlanDomain2Device(vlanDevices),
		vppforwarder.WithMechanismPriority(cfg.MechanismPriority),
		vppforwarder.WithClientURL(&cfg.ConnectTo),
		vppforwarder.WithDialTimeout(cfg.DialTimeout),
		vppforwarder.WithMetricsOptions(metricsOpts...),
		vppforwarder.WithCleanupOptions(cleanupOpts...),
		vppforwarder.WithVxlanOptions(vxlan.WithPort(cfg.VxlanPort)),
		vppforwarder.WithDialOptions(dialOptions...),
	)

	logger.Infof("executing phase 8: create grpc server and register xconnect (time since start: %s)", time.Since(start))
	serverTLS := tlsconfig.MTLSServerConfig(source, source, tlsconfig.AuthorizeAny())
	serverTLS.MinVersion = tls.VersionTLS12
	server := grpc.NewServer(append(tracing.WithTracing(), grpc.Creds(grpcfd.TransportCredentials(credentials.NewTLS(serverTLS))))...)
	endpoint.Register(server)
	serverErrors := grpcutils.ListenAndServe(ctx, &cfg.ListenOn, server)
	cancelOnError(ctx, cancel, serverErrors)

	logger.Infof("executing phase 9: register %s with the registry (time since start: %s)", cfg.NSName, time.Since(start))
	registry := registryclient.NewNetworkServiceEndpointRegistryClient(ctx,
		registryclient.WithClientURL(&cfg.ConnectTo),
		registryclient.WithDialOptions(dialOptions...),
		registryclient.WithNSEAdditionalFunctionality(sendfd.NewNetworkServiceEndpointRegistryClient()),
		registryclient.WithAuthorizeNSERegistryClient(registryauthorize.NewNetworkServiceEndpointRegistryClient(
			registryauthorize.WithPolicies(cfg.RegistryClientPolicies...))),
	)
	if _, err = registry.Register(ctx, &registryapi.NetworkServiceEndpoint{
		Name:                 cfg.Name,
		NetworkServiceLabels: map[string]*registryapi.NetworkServiceLabels{cfg.NSName: {Labels: cfg.Labels}},
		NetworkServiceNames:  []string{cfg.NSName},
		Url:                  cfg.ListenOn.String(),
	}); err != nil {
		logger.Fatalf("failed to connect to registry: %+v", err)
	}
	logger.Infof("Startup completed in %v", time.Since(start))

	<-ctx.Done()
	<-serverErrors
	<-cleanupDone
}

// stockDialOptions are the options of every dial the stock forwarder makes: toward the next
// hop and toward the registry.
func stockDialOptions(source *workloadapi.X509Source, tokens token.GeneratorFunc) []grpc.DialOption {
	clientTLS := tlsconfig.MTLSClientConfig(source, source, tlsconfig.AuthorizeAny())
	clientTLS.MinVersion = tls.VersionTLS12
	return append(tracing.WithTracingDial(),
		grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true), grpc.PerRPCCredentials(token.NewPerRPCCredentials(tokens))),
		grpc.WithTransportCredentials(grpcfd.TransportCredentials(credentials.NewTLS(clientTLS))),
		grpcfd.WithChainStreamInterceptor(),
		grpcfd.WithChainUnaryInterceptor(),
	)
}

// startObservability starts what stock starts when asked: OpenTelemetry exporters, the
// Prometheus server, pprof.
func startObservability(ctx context.Context, cancel context.CancelFunc, cfg *config) {
	if opentelemetry.IsEnabled() {
		spans := opentelemetry.InitSpanExporter(ctx, cfg.OpenTelemetryEndpoint)
		metricsExporter := opentelemetry.InitOPTLMetricExporter(ctx, cfg.OpenTelemetryEndpoint, cfg.MetricsExportInterval)
		o := opentelemetry.Init(ctx, spans, metricsExporter, cfg.Name)
		go func() {
			<-ctx.Done()
			if err := o.Close(); err != nil {
				log.FromContext(ctx).Error(err.Error())
			}
		}()
	}
	if prometheus.IsEnabled() {
		server := prometheus.NewServer(cfg.PrometheusListenOn,
			prometheus.WithCustomCert(cfg.PrometheusCertFile, cfg.PrometheusKeyFile),
			prometheus.WithCustomCA(cfg.PrometheusCAFile),
			prometheus.WithHeaderTimeout(cfg.PrometheusServerHeaderTimeout),
			prometheus.WithCertificateMonitoring(cfg.PrometheusMonitorCertificate),
			prometheus.WithMaxBindThreshold(cfg.PrometheusMaxBindThreshold),
		)
		go server.ListenAndServe(ctx, cancel)
	}
	if cfg.PprofEnabled {
		go pprofutils.ListenAndServe(ctx, cfg.PprofListenOn)
	}
}

// cancelOnError ends the forwarder when the server fails, at once if it already has.
func cancelOnError(ctx context.Context, cancel context.CancelFunc, errs <-chan error) {
	select {
	case err := <-errs:
		log.FromContext(ctx).Fatal(err)
	default:
	}
	go func() {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			log.FromContext(ctx).Error(err)
		}
		cancel()
	}()
}
