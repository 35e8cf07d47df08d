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

// Registration is a live registration, refreshed until Unregister or the context of Register ends.
type Registration struct {
	client registryapi.NetworkServiceEndpointRegistryClient
	nse    *registryapi.NetworkServiceEndpoint
}

// Register registers endpoint at registryURL (nsmgr), enforcing the registry client OPA policies
// found at policyPaths. The registration is refreshed until ctx ends.
func Register(ctx context.Context, registryURL *url.URL, endpoint Endpoint, policyPaths []string, dialTimeout time.Duration, dialOptions ...grpc.DialOption) (*Registration, error) {
	client := registryclient.NewNetworkServiceEndpointRegistryClient(ctx,
		registryclient.WithClientURL(registryURL),
		registryclient.WithDialTimeout(dialTimeout),
		registryclient.WithDialOptions(dialOptions...),
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
		return nil, fmt.Errorf("registering %s with the registry at %s: %w", endpoint.Name, registryURL, err)
	}
	return &Registration{client: client, nse: registered}, nil
}

// Unregister removes the registration, so that nsmgr stops selecting this forwarder.
func (r *Registration) Unregister(ctx context.Context) error {
	if _, err := r.client.Unregister(ctx, r.nse); err != nil {
		return fmt.Errorf("unregistering %s: %w", r.nse.GetName(), err)
	}
	return nil
}
