package xconnect

import (
	"context"
	"io"

	"github.com/pkg/errors"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/monitorretry"
)

// endpointLookup asks the registry, through the same client that discovers next hops, whether an
// endpoint is still registered. Only a complete answer counts: a broken stream is an error, never
// "not registered", so that a registry hiccup cannot turn an idle cut into a heal.
func endpointLookup(registryNSE registryapi.NetworkServiceEndpointRegistryClient) monitorretry.EndpointLookup {
	return func(ctx context.Context, name string) (bool, error) {
		stream, err := registryNSE.Find(ctx, &registryapi.NetworkServiceEndpointQuery{
			NetworkServiceEndpoint: &registryapi.NetworkServiceEndpoint{Name: name},
		})
		if err != nil {
			return false, errors.Wrapf(err, "looking up endpoint %s", name)
		}
		for {
			resp, recvErr := stream.Recv()
			if errors.Is(recvErr, io.EOF) {
				return false, nil
			}
			if recvErr != nil {
				return false, errors.Wrapf(recvErr, "looking up endpoint %s", name)
			}
			if resp.GetNetworkServiceEndpoint().GetName() == name && !resp.GetDeleted() {
				return true, nil
			}
		}
	}
}
