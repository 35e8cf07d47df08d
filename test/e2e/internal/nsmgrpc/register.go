package nsmgrpc

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	registryclient "github.com/networkservicemesh/sdk/pkg/registry/chains/client"
	registryauthorize "github.com/networkservicemesh/sdk/pkg/registry/common/authorize"
)

// Endpoint is what a harness endpoint registers: its network services, with their payload, and
// itself, reachable at URL, through the registry (or nsmgr) at ConnectTo.
type Endpoint struct {
	Name        string
	Services    []string
	Payload     string
	URL         string
	ConnectTo   *url.URL
	DialTimeout time.Duration
	DialOptions []grpc.DialOption
	// Labels are the endpoint's labels for each of its services, what a service's destination
	// selectors match (cmd-nse-icmp-responder's NSM_LABELS).
	Labels map[string]string
	// NetworkServices, when set, are registered in place of Services with Payload: services
	// with matches, as an operator applies them (a NetworkService resource).
	NetworkServices []*registryapi.NetworkService
	// NoServices registers the endpoint only, its services being someone else's (stock's
	// NSM_REGISTER_SERVICE=false). The registry lets only the identity that registered a service
	// change it, so an endpoint in a new pod (heal local-nse-death) cannot register it again.
	NoServices bool
	// NSEClients are added to the endpoint registry client's chain (an endpoint behind an nsmgr
	// passes its client info and descriptors).
	NSEClients []registryapi.NetworkServiceEndpointRegistryClient
}

// Register registers e's network services and e, and returns e as registered and how to
// withdraw it.
func Register(ctx context.Context, e *Endpoint) (*registryapi.NetworkServiceEndpoint, func() error, error) {
	if !e.NoServices {
		services := e.NetworkServices
		if services == nil {
			for _, service := range e.Services {
				services = append(services, &registryapi.NetworkService{Name: service, Payload: e.Payload})
			}
		}
		if err := RegisterServices(ctx, e, services...); err != nil {
			return nil, nil, err
		}
	}
	nseClient := EndpointRegistryClient(ctx, e.ConnectTo, e.DialTimeout, e.DialOptions, e.NSEClients...)
	nse := &registryapi.NetworkServiceEndpoint{
		Name:                 e.Name,
		NetworkServiceNames:  e.Services,
		NetworkServiceLabels: map[string]*registryapi.NetworkServiceLabels{},
		Url:                  e.URL,
	}
	for _, service := range e.Services {
		nse.NetworkServiceLabels[service] = &registryapi.NetworkServiceLabels{Labels: e.Labels}
	}
	registered, err := nseClient.Register(ctx, nse)
	if err != nil {
		return nil, nil, fmt.Errorf("register endpoint %s: %w", e.Name, err)
	}
	unregister := func() error {
		unregisterCtx, cancel := context.WithTimeout(ctx, e.DialTimeout)
		defer cancel()
		_, unregisterErr := nseClient.Unregister(unregisterCtx, registered)
		return unregisterErr
	}
	return registered, unregister, nil
}

// RegisterServices registers services, or registers them again with what they say now (an
// operator applying a changed NetworkService), through e's registry or nsmgr.
func RegisterServices(ctx context.Context, e *Endpoint, services ...*registryapi.NetworkService) error {
	nsClient := registryclient.NewNetworkServiceRegistryClient(ctx,
		registryclient.WithClientURL(e.ConnectTo),
		registryclient.WithDialTimeout(e.DialTimeout),
		registryclient.WithAuthorizeNSRegistryClient(registryauthorize.NewNetworkServiceRegistryClient(
			registryauthorize.WithPolicies(RegistryClientPolicies...))),
		registryclient.WithDialOptions(e.DialOptions...))
	for _, service := range services {
		if _, err := nsClient.Register(ctx, service); err != nil {
			return fmt.Errorf("register network service %s: %w", service.GetName(), err)
		}
	}
	return nil
}

// EndpointRegistryClient is a client of the endpoint registry through connectTo (an nsmgr or
// the registry), authorized as the harness's workloads are; more joins its chain (an endpoint
// behind an nsmgr passes its descriptors with recvfd and sendfd).
func EndpointRegistryClient(ctx context.Context, connectTo *url.URL, dialTimeout time.Duration, dialOptions []grpc.DialOption,
	more ...registryapi.NetworkServiceEndpointRegistryClient) registryapi.NetworkServiceEndpointRegistryClient {
	return registryclient.NewNetworkServiceEndpointRegistryClient(ctx,
		registryclient.WithClientURL(connectTo),
		registryclient.WithDialTimeout(dialTimeout),
		registryclient.WithDialOptions(dialOptions...),
		registryclient.WithAuthorizeNSERegistryClient(registryauthorize.NewNetworkServiceEndpointRegistryClient(
			registryauthorize.WithPolicies(RegistryClientPolicies...))),
		registryclient.WithNSEAdditionalFunctionality(more...),
	)
}
