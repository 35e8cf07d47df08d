package registrylookup

import (
	"context"
	"net/url"

	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/common/recvfd"
	"github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/registry/core/chain"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"

	"github.com/nsmfwd/forwarder-vpp/internal/registry/findretry"
)

// Clients are the network service and endpoint registry clients on one connection to the nsmgr.
type Clients struct {
	NetworkServices         registry.NetworkServiceRegistryClient
	NetworkServiceEndpoints registry.NetworkServiceEndpointRegistryClient
}

// New returns the clients for the registry behind nsmgrURL. The connection is made on the first
// call and closed when ctx is done.
func New(ctx context.Context, nsmgrURL *url.URL, opts ...Option) (*Clients, error) {
	o := &options{dialTimeout: DefaultDialTimeout}
	for _, opt := range opts {
		opt(o)
	}
	cc, err := newReadyConn(grpcutils.URLToTarget(nsmgrURL), o)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { _ = cc.Close() })
	return &Clients{
		NetworkServices: chain.NewNetworkServiceRegistryClient(registry.NewNetworkServiceRegistryClient(cc)),
		NetworkServiceEndpoints: chain.NewNetworkServiceEndpointRegistryClient(
			// Before recvfd: the nsmgr's sendfd may fail a Find while passing a URL's descriptor,
			// and more often so on a connection shared by many Finds.
			findretry.NewNetworkServiceEndpointRegistryClient(),
			// Endpoint URLs arrive as descriptors; recvfd keeps one per endpoint, so that an
			// endpoint's URL stays the same from one Find to the next.
			recvfd.NewNetworkServiceEndpointRegistryClient(),
			sendfd.NewNetworkServiceEndpointRegistryClient(),
			registry.NewNetworkServiceEndpointRegistryClient(cc),
		),
	}, nil
}
