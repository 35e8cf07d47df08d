package registration_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

// restartedNSMgr is an nsmgr that has just come back in front of a registry that kept the
// forwarder's registration: the nsmgr knows no registration, takes a while to pass one on, and
// drops the Unregister of one it does not know, as sdk's registry begin does.
type restartedNSMgr struct {
	registryapi.UnimplementedNetworkServiceEndpointRegistryServer
	registerTakes time.Duration
	// registering is told of each Register as it begins.
	registering chan struct{}
	mu          sync.Mutex
	// known are the nsmgr's registrations, behind the registry's.
	known, behind map[string]bool
}

func (n *restartedNSMgr) Register(ctx context.Context, nse *registryapi.NetworkServiceEndpoint) (*registryapi.NetworkServiceEndpoint, error) {
	select {
	case n.registering <- struct{}{}:
	default:
	}
	select {
	case <-time.After(n.registerTakes):
	case <-ctx.Done():
		return nil, errors.New("the forwarder gave up its Register")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.known[nse.GetName()], n.behind[nse.GetName()] = true, true
	return nse, nil
}

func (n *restartedNSMgr) Find(*registryapi.NetworkServiceEndpointQuery, registryapi.NetworkServiceEndpointRegistry_FindServer) error {
	return nil
}

func (n *restartedNSMgr) Unregister(_ context.Context, nse *registryapi.NetworkServiceEndpoint) (*empty.Empty, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.known[nse.GetName()] {
		delete(n.known, nse.GetName())
		delete(n.behind, nse.GetName())
	}
	return new(empty.Empty), nil
}

// registered are the registry's registrations.
func (n *restartedNSMgr) registered() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var names []string
	for name := range n.behind {
		names = append(names, name)
	}
	return names
}

// A forwarder deleted right after its nsmgr came back (upstream's local-nsmgr-local-forwarder-
// memif deletes the two pods back to back) is still registering again when it unregisters: the
// nsmgr must end up without its registration, which would otherwise outlive the forwarder until
// it expires.
func TestUnregisterRightAfterTheNsmgrCameBackRemovesTheRegistration(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	identity := domain.Issue("/nsmgr")
	_, registryURL, first := serveRegistry(t, identity)
	ctx, registered := registerForwarder(t, domain, registryURL)

	first.Stop()
	nsmgr := &restartedNSMgr{registerTakes: 300 * time.Millisecond, registering: make(chan struct{}, 1), known: map[string]bool{},
		behind: map[string]bool{"forwarder-a": true}}
	serveAt(t, registryURL, identity, nsmgr)
	// The forwarder's heal sees the stream end and registers again; SIGTERM comes meanwhile.
	select {
	case <-nsmgr.registering:
	case <-ctx.Done():
		t.Fatal("the forwarder never registered again with the nsmgr that came back")
	}

	_ = registered.Unregister(ctx)
	require.Empty(t, nsmgr.registered(), "the registry kept the forwarder's registration after its Unregister")
}

// serveAt serves registry on the unix socket of u, as the nsmgr that comes back there does.
func serveAt(t *testing.T, u *url.URL, identity grpctransport.Identity, registry registryapi.NetworkServiceEndpointRegistryServer) {
	t.Helper()
	var listener net.Listener
	require.Eventually(t, func() bool {
		var err error
		listener, err = net.Listen("unix", u.Path)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	server := grpc.NewServer(grpctransport.ServerOptions(identity, grpctransport.DefaultKeepalive)...)
	registryapi.RegisterNetworkServiceEndpointRegistryServer(server, registry)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
}
