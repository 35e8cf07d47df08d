package findretry

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/next"
	"github.com/networkservicemesh/sdk/pkg/registry/core/streamchannel"
	"google.golang.org/grpc"
)

// attempts bounds the Finds made for one call: the fault is a race on one write, two in a row
// are already unlikely.
const attempts = 3

type findRetryNSEClient struct{}

// NewNetworkServiceEndpointRegistryClient returns the element; it belongs in front of the
// elements whose Find it retries.
func NewNetworkServiceEndpointRegistryClient() registry.NetworkServiceEndpointRegistryClient {
	return new(findRetryNSEClient)
}

func (c *findRetryNSEClient) Register(ctx context.Context, nse *registry.NetworkServiceEndpoint, opts ...grpc.CallOption) (*registry.NetworkServiceEndpoint, error) {
	return next.NetworkServiceEndpointRegistryClient(ctx).Register(ctx, nse, opts...)
}

func (c *findRetryNSEClient) Find(ctx context.Context, query *registry.NetworkServiceEndpointQuery, opts ...grpc.CallOption) (registry.NetworkServiceEndpointRegistry_FindClient, error) {
	if query.GetWatch() {
		return next.NetworkServiceEndpointRegistryClient(ctx).Find(ctx, query, opts...)
	}
	var err error
	for range attempts {
		var answers []*registry.NetworkServiceEndpointResponse
		if answers, err = findToEnd(ctx, query, opts...); err == nil {
			return replay(ctx, answers), nil
		}
		if !worthAnotherAttempt(ctx, err) {
			break
		}
	}
	return nil, err
}

func (c *findRetryNSEClient) Unregister(ctx context.Context, nse *registry.NetworkServiceEndpoint, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.NetworkServiceEndpointRegistryClient(ctx).Unregister(ctx, nse, opts...)
}

func replay(ctx context.Context, answers []*registry.NetworkServiceEndpointResponse) registry.NetworkServiceEndpointRegistry_FindClient {
	ch := make(chan *registry.NetworkServiceEndpointResponse, len(answers))
	for _, answer := range answers {
		ch <- answer
	}
	close(ch)
	return streamchannel.NewNetworkServiceEndpointFindClient(ctx, ch)
}
