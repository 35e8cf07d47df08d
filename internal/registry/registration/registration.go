package registration

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	registryclient "github.com/networkservicemesh/sdk/pkg/registry/chains/client"
	registryauthorize "github.com/networkservicemesh/sdk/pkg/registry/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/registry/common/clientinfo"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
)

// Endpoint describes the forwarder's registration.
type Endpoint struct {
	Name        string
	ServiceName string
	Labels      map[string]string
	// URL is where the forwarder serves; unix sockets reach nsmgr as passed file descriptors.
	URL *url.URL
}

// Registration is a live registration, refreshed until Unregister.
type Registration struct {
	client           registryapi.NetworkServiceEndpointRegistryClient
	nse              *registryapi.NetworkServiceEndpoint
	abandonRegisters context.CancelFunc
	stopRefreshing   context.CancelFunc
}

// Register registers endpoint at registryURL (nsmgr), enforcing the registry client OPA policies
// found at policyPaths. It waits for the registry (nsmgr may start after the forwarder) until ctx
// ends; once registered, the registration is refreshed until Unregister, whatever happens to ctx.
func Register(ctx context.Context, registryURL *url.URL, endpoint Endpoint, policyPaths []string, dialTimeout time.Duration, dialOptions ...grpc.DialOption) (*Registration, error) {
	lifetime, stopRefreshing := context.WithCancel(context.WithoutCancel(ctx))
	retryClient, abandonRegisters := newUnregisterOnce(lifetime)
	client := registryclient.NewNetworkServiceEndpointRegistryClient(lifetime,
		registryclient.WithClientURL(registryURL),
		registryclient.WithDialTimeout(dialTimeout),
		registryclient.WithDialOptions(dialOptions...),
		registryclient.WithNSERetryClient(retryClient),
		registryclient.WithNSEAdditionalFunctionality(
			clientinfo.NewNetworkServiceEndpointRegistryClient(),
			registrysendfd.NewNetworkServiceEndpointRegistryClient(),
		),
		registryclient.WithAuthorizeNSERegistryClient(registryauthorize.NewNetworkServiceEndpointRegistryClient(
			registryauthorize.WithPolicies(policyPaths...),
		)),
	)
	registered, err := client.Register(ctx, &registryapi.NetworkServiceEndpoint{
		Name:                 endpoint.Name,
		NetworkServiceNames:  []string{endpoint.ServiceName},
		NetworkServiceLabels: map[string]*registryapi.NetworkServiceLabels{endpoint.ServiceName: {Labels: endpoint.Labels}},
		Url:                  grpcutils.URLToTarget(endpoint.URL),
	})
	if err != nil {
		stopRefreshing()
		return nil, fmt.Errorf("registering %s with the registry at %s: %w", endpoint.Name, registryURL, err)
	}
	return &Registration{client: client, nse: registered, abandonRegisters: abandonRegisters, stopRefreshing: stopRefreshing}, nil
}

// registerGrace is how long Unregister lets a Register in flight go on. An nsmgr that has just
// come back knows the forwarder only once that Register is through, and drops the Unregister of
// a registration it does not know, which its registry then keeps until it expires; an nsmgr that
// is down costs the forwarder's exit this much and no more.
const registerGrace = time.Second

// Unregister removes the registration, so that nsmgr stops selecting this forwarder, and stops
// refreshing it even when the registry cannot be reached.
func (r *Registration) Unregister(ctx context.Context) error {
	defer r.stopRefreshing()
	defer r.abandonRegisters()
	// sdk's begin runs the Unregister after the Register in flight, if there is one.
	abandonLater := time.AfterFunc(registerGrace, r.abandonRegisters)
	defer abandonLater.Stop()
	if _, err := r.client.Unregister(ctx, r.nse); err != nil {
		return fmt.Errorf("unregistering %s: %w", r.nse.GetName(), err)
	}
	return nil
}
