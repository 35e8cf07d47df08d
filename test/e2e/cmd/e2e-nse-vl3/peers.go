package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/begin"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/retry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/ipcontext/vl3"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// peering is the endpoint's client side: one connection to each vl3 endpoint registered before
// it. The endpoint registered later asks, so every two endpoints share exactly one connection.
// The vl3 client gives the other endpoint this endpoint's address and routes to its prefix;
// the other endpoint gives back routes to its own prefix and to the whole network.
type peering struct {
	cfg    *config
	client networkservice.NetworkServiceClient
	finder registryapi.NetworkServiceEndpointRegistryClient

	// labels are the peering requests' labels (peerLabels).
	labels map[string]string

	mu    sync.Mutex
	conns []*networkservice.Connection
}

// pools are the endpoint's vl3 pools; dns names its DNS server to the other endpoint (sdk's
// vl3dns client, as upstream's endpoints): the other endpoint's vl3 servers tell a peer from a
// client by that DNS config and a source address of their own family, and without it the peer
// would be handed an address of the other endpoint's prefix, as a client is.
// plane is where the peering connections end on this side.
func newPeering(ctx context.Context, cfg *config, dialOptions []grpc.DialOption, pools []*vl3.IPAM, dns networkservice.NetworkServiceClient, plane *dataplane) *peering {
	var elements []networkservice.NetworkServiceClient
	for _, pool := range pools {
		elements = append(elements, vl3.NewClient(ctx, pool))
	}
	elements = append(elements, dns)
	elements = append(elements, plane.client...)
	c := client.NewClient(ctx,
		client.WithName(cfg.Name),
		client.WithClientURL(&cfg.ConnectTo),
		client.WithAuthorizeClient(authorize.NewClient()),
		client.WithHealClient(heal.NewClient(ctx, plane.heal...)),
		client.WithAdditionalFunctionality(elements...),
		client.WithDialTimeout(cfg.DialTimeout),
		client.WithDialOptions(dialOptions...),
		// A peer is that endpoint or none: a heal must not move the connection to another one.
		client.WithReselectFunc(begin.ReselectWithSameEndpointFunc),
	)
	finder := nsmgrpc.EndpointRegistryClient(ctx, &cfg.ConnectTo, cfg.DialTimeout, dialOptions)
	return &peering{
		cfg: cfg, client: retry.NewClient(c, retry.WithTryTimeout(cfg.RequestTimeout)), finder: finder,
		labels: peerLabels(cfg, plane),
	}
}

// peerLabels are the labels of a peering request, from which the other endpoint's DNS names
// this endpoint's address (the peering's source address). With a VPP, none, as upstream's: the
// endpoint's name is its connection to itself, and a podName here would give the other
// endpoint a second record of that name, at another address. In the kernel data plane the
// endpoint's name is its own address, and the other endpoint names it so too: one name for the
// address, both ways.
func peerLabels(cfg *config, plane *dataplane) map[string]string {
	if plane.connectsToItself {
		return nil
	}
	return map[string]string{"podName": cfg.Name}
}

// connectToEarlierEndpoints asks for the service from every endpoint of it registered before
// self, one after the other; one it cannot reach is left out.
func (p *peering) connectToEarlierEndpoints(ctx context.Context, self *registryapi.NetworkServiceEndpoint) error {
	stream, err := p.finder.Find(ctx, &registryapi.NetworkServiceEndpointQuery{
		NetworkServiceEndpoint: &registryapi.NetworkServiceEndpoint{NetworkServiceNames: p.cfg.ServiceNames},
	})
	if err != nil {
		return fmt.Errorf("find the other vl3 endpoints: %w", err)
	}
	registeredAt := self.GetInitialRegistrationTime().AsTime()
	for _, nse := range registryapi.ReadNetworkServiceEndpointList(stream) {
		if nse.GetName() == self.GetName() || !nse.GetInitialRegistrationTime().AsTime().Before(registeredAt) {
			continue
		}
		requestCtx, cancel := context.WithTimeout(ctx, 4*p.cfg.RequestTimeout)
		conn, requestErr := p.client.Request(requestCtx, &networkservice.NetworkServiceRequest{
			Connection: &networkservice.Connection{
				NetworkServiceEndpointName: nse.GetName(),
				NetworkService:             p.cfg.ServiceNames[0],
				Payload:                    p.cfg.Payload,
				Labels:                     p.labels,
			},
		})
		cancel()
		if requestErr != nil {
			// As upstream's: an endpoint that crashed stays registered until its registration
			// expires, and must not keep this one from peering with the others and serving.
			log.FromContext(ctx).Errorf("peer with vl3 endpoint %s: %v", nse.GetName(), requestErr)
			continue
		}
		log.FromContext(ctx).Infof("peered with vl3 endpoint %s: %s %v", nse.GetName(), conn.GetMechanism().GetType(), conn.GetMechanism().GetParameters())
		p.mu.Lock()
		p.conns = append(p.conns, conn)
		p.mu.Unlock()
	}
	return nil
}

// closeAll closes every peering connection.
func (p *peering) closeAll() error {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	var errs []error
	for _, conn := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.RequestTimeout)
		if _, err := p.client.Close(ctx, conn); err != nil {
			errs = append(errs, fmt.Errorf("close the peering with %s: %w", conn.GetNetworkServiceEndpointName(), err))
		}
		cancel()
	}
	return errors.Join(errs...)
}
