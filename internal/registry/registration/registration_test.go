package registration_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/internal/registry/registration"
	"github.com/nsmfwd/forwarder-vpp/internal/registry/registration/registrationtest"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

// serveRegistry serves a fake registry on a unix socket with the forwarder's own server options.
func serveRegistry(t *testing.T, identity grpctransport.Identity) (*registrationtest.Recorder, *url.URL, *grpc.Server) {
	socket := filepath.Join(t.TempDir(), "registry.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	registry := new(registrationtest.Recorder)
	server := grpc.NewServer(grpctransport.ServerOptions(identity, grpctransport.DefaultKeepalive)...)
	registryapi.RegisterNetworkServiceEndpointRegistryServer(server, registry)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return registry, &url.URL{Scheme: "unix", Path: socket}, server
}

// registerForwarder registers a forwarder of domain at registryURL; ctx bounds the test's calls.
func registerForwarder(t *testing.T, domain *svidtest.TrustDomain, registryURL *url.URL) (ctx context.Context, registered *registration.Registration) {
	t.Helper()
	forwarder := domain.Issue("/forwarder")
	dialOptions := grpctransport.DialOptions(forwarder, grpctransport.TokenGenerator(forwarder, time.Minute), grpctransport.DefaultKeepalive)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	registered, err := registration.Register(ctx, registryURL, forwarderEndpoint(t), nil, time.Second, dialOptions...)
	require.NoError(t, err)
	return ctx, registered
}

func forwarderEndpoint(t *testing.T) registration.Endpoint {
	listenSocket := filepath.Join(t.TempDir(), "forwarder.sock")
	listener, err := net.Listen("unix", listenSocket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	return registration.Endpoint{
		Name:        "forwarder-a",
		ServiceName: "forwarder",
		Labels:      map[string]string{"p2p": "true"},
		URL:         &url.URL{Scheme: "unix", Path: listenSocket},
	}
}

func TestRegisterAndUnregisterOverMTLS(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	registry, registryURL, _ := serveRegistry(t, domain.Issue("/nsmgr"))
	forwarder := domain.Issue("/forwarder")
	dialOptions := grpctransport.DialOptions(forwarder, grpctransport.TokenGenerator(forwarder, time.Minute), grpctransport.DefaultKeepalive)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	registered, err := registration.Register(ctx, registryURL, forwarderEndpoint(t), nil, time.Second, dialOptions...)
	require.NoError(t, err)

	registeredEndpoints, _ := registry.Snapshot()
	require.Len(t, registeredEndpoints, 1)
	nse := registeredEndpoints[0]
	require.Equal(t, "forwarder-a", nse.GetName())
	require.Equal(t, []string{"forwarder"}, nse.GetNetworkServiceNames())
	require.Equal(t, map[string]string{"p2p": "true"}, nse.GetNetworkServiceLabels()["forwarder"].GetLabels())
	require.NotEmpty(t, nse.GetUrl())

	require.NoError(t, registered.Unregister(ctx))
	_, unregistered := registry.Snapshot()
	require.Equal(t, []string{"forwarder-a"}, unregistered)
}

func TestRegistryOfAnotherTrustDomainIsRefused(t *testing.T) {
	_, registryURL, _ := serveRegistry(t, svidtest.NewTrustDomain(t, "other.nsm").Issue("/nsmgr"))
	forwarder := svidtest.NewTrustDomain(t, "test.nsm").Issue("/forwarder")
	dialOptions := grpctransport.DialOptions(forwarder, grpctransport.TokenGenerator(forwarder, time.Minute), grpctransport.DefaultKeepalive)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := registration.Register(ctx, registryURL, forwarderEndpoint(t), nil, time.Second, dialOptions...)
	require.ErrorContains(t, err, "registering forwarder-a with the registry at "+registryURL.String())
}

// On SIGTERM the forwarder unregisters from an nsmgr that may be stopping too (a whole-system
// restart): the call must fail at once, not wait for the nsmgr to come back until its bound,
// which would delay the forwarder's exit and so its successor. This holds also when the
// forwarder has already noticed the nsmgr is gone and is trying to register again.
func TestUnregisterFromAStoppedRegistryFailsAtOnce(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	_, registryURL, server := serveRegistry(t, domain.Issue("/nsmgr"))
	ctx, registered := registerForwarder(t, domain, registryURL)
	server.Stop()
	// sdk's heal sees the registry's watch stream end and begins re-registering; Unregister is
	// queued behind that re-registration, which is what held it.
	time.Sleep(time.Second)

	require.Error(t, registered.Unregister(ctx))
	require.NoError(t, ctx.Err(), "Unregister waited for the stopped registry until its context ended")
}
