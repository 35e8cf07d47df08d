package xconnect

import (
	"net/url"
	"time"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/cleanup"
	authmonitor "github.com/networkservicemesh/sdk/pkg/tools/monitorconnection/authorize"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/monitorretry"
)

type options struct {
	name                   string
	authorizeServer        networkservice.NetworkServiceServer
	authorizeMonitorServer networkservice.MonitorConnectionServer
	clientURL              *url.URL
	dialTimeout            time.Duration
	dialOptions            []grpc.DialOption
	vlanDomainToDevice     map[string]string
	mechanismPriority      []string
	metricsOptions         []metrics.Option
	cleanupOptions         []cleanup.Option
	vxlanOptions           []vxlan.Option
	kernelInterface        kernelif.Kind
	monitorRetryOptions    []monitorretry.Option
	expiryOptions          []expiry.Option
	leftovers              *restore.Leftovers
	journal                *journal.Journal
	journalCleanup         journal.Cleanup
	requestCheckOptions    []requestcheck.Option
}

func defaultOptions() *options {
	return &options{
		leftovers:              &restore.Leftovers{},
		name:                   "forwarder-vpp",
		authorizeServer:        authorize.NewServer(authorize.Any()),
		authorizeMonitorServer: authmonitor.NewMonitorConnectionServer(authmonitor.Any()),
		clientURL:              &url.URL{Scheme: "unix", Path: "/connect.to.socket"},
		dialTimeout:            15 * time.Second,
		vlanDomainToDevice:     map[string]string{},
		kernelInterface:        kernelif.Auto,
	}
}

// Option configures the forwarder endpoint.
type Option func(*options)

// WithName sets the name the forwarder registers and signs path segments with.
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithAuthorizeServer replaces the default allow-all authorization of incoming requests.
func WithAuthorizeServer(server networkservice.NetworkServiceServer) Option {
	return func(o *options) { o.authorizeServer = server }
}

// WithAuthorizeMonitorConnectionServer replaces the default allow-all authorization of
// MonitorConnections streams.
func WithAuthorizeMonitorConnectionServer(server networkservice.MonitorConnectionServer) Option {
	return func(o *options) { o.authorizeMonitorServer = server }
}

// WithClientURL sets where the forwarder dials onward (nsmgr) and discovers through the registry.
func WithClientURL(u *url.URL) Option {
	return func(o *options) { o.clientURL = u }
}

// WithDialTimeout bounds each onward dial.
func WithDialTimeout(timeout time.Duration) Option {
	return func(o *options) { o.dialTimeout = timeout }
}

// WithDialOptions sets the gRPC options of every onward dial (credentials, keepalive, tracing).
func WithDialOptions(dialOptions ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = dialOptions }
}

// WithVlanDomainToDevice maps a vlan "via" label to the host device that carries it.
func WithVlanDomainToDevice(domainToDevice map[string]string) Option {
	return func(o *options) { o.vlanDomainToDevice = domainToDevice }
}

// WithMechanismPriority orders the mechanisms offered onward.
func WithMechanismPriority(priority []string) Option {
	return func(o *options) { o.mechanismPriority = priority }
}

// WithMetricsOptions configures the VPP interface statistics elements.
func WithMetricsOptions(metricsOptions ...metrics.Option) Option {
	return func(o *options) { o.metricsOptions = metricsOptions }
}

// WithCleanupOptions configures how live connections are closed on shutdown.
func WithCleanupOptions(cleanupOptions ...cleanup.Option) Option {
	return func(o *options) { o.cleanupOptions = cleanupOptions }
}

// WithVxlanOptions configures the vxlan mechanism (e.g. its UDP port).
func WithVxlanOptions(vxlanOptions ...vxlan.Option) Option {
	return func(o *options) { o.vxlanOptions = vxlanOptions }
}

// WithKernelInterface selects tap, veth + af-packet, or automatic choice for the kernel mechanism.
func WithKernelInterface(kind kernelif.Kind) Option {
	return func(o *options) { o.kernelInterface = kind }
}

// WithMonitorRetryOptions tunes the re-open of a broken upstream MonitorConnections stream; by
// default it is bounded by the dial timeout and consults the registry.
func WithMonitorRetryOptions(retryOptions ...monitorretry.Option) Option {
	return func(o *options) { o.monitorRetryOptions = retryOptions }
}

// WithExpiryOptions tunes the release of connections that expire without a Close reaching the
// data plane.
func WithExpiryOptions(expiryOptions ...expiry.Option) Option {
	return func(o *options) { o.expiryOptions = expiryOptions }
}

// WithLeftovers hands the endpoint what previous forwarder runs left in VPP and the kernel, so that
// a connection requested again adopts what is still right and rebuilds the rest (see package restore).
func WithLeftovers(leftovers *restore.Leftovers) Option {
	return func(o *options) { o.leftovers = leftovers }
}

// WithJournal records every connection in j ahead of the data plane, so that a later run can adopt
// or release what it holds (see package journal). cleanup releases what a record names when a
// Close fails, retried until it succeeds. Without it nothing is recorded.
func WithJournal(j *journal.Journal, cleanup journal.Cleanup) Option {
	return func(o *options) { o.journal, o.journalCleanup = j, cleanup }
}

// WithRequestCheckOptions configures the checks every Request passes first (e.g. its bounds).
func WithRequestCheckOptions(requestCheckOptions ...requestcheck.Option) Option {
	return func(o *options) { o.requestCheckOptions = requestCheckOptions }
}
