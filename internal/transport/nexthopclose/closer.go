package nexthopclose

import (
	"context"
	"net/url"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
)

// New returns a closer of connections at their endpoint's next hop: it finds the endpoint the
// connection names in nses, dials it within dialTimeout and sends the Close.
func New(nses registry.NetworkServiceEndpointRegistryClient, dialTimeout time.Duration, dialOptions ...grpc.DialOption) func(ctx context.Context, conn *networkservice.Connection) error {
	return func(ctx context.Context, conn *networkservice.Connection) error {
		target, err := nextHop(ctx, nses, conn.GetNetworkServiceEndpointName())
		if err != nil {
			return err
		}
		dialCtx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		//nolint:staticcheck // DialContext, as sdk's dial: the forwarder's options may ask to block until ready.
		cc, err := grpc.DialContext(dialCtx, target, dialOptions...)
		if err != nil {
			return errors.Wrapf(err, "dialing %s", target)
		}
		defer func() { _ = cc.Close() }()
		_, err = networkservice.NewNetworkServiceClient(cc).Close(ctx, conn)
		return errors.Wrapf(err, "closing at %s", target)
	}
}

// nextHop is the dial target of the endpoint named name, as the registry gives it now.
func nextHop(ctx context.Context, nses registry.NetworkServiceEndpointRegistryClient, name string) (string, error) {
	stream, err := nses.Find(ctx, &registry.NetworkServiceEndpointQuery{NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: name}})
	if err != nil {
		return "", errors.Wrapf(err, "finding endpoint %s", name)
	}
	for _, nse := range registry.ReadNetworkServiceEndpointList(stream) {
		if nse.GetName() != name {
			continue
		}
		u, parseErr := url.Parse(nse.GetUrl())
		if parseErr != nil || nse.GetUrl() == "" {
			return "", errors.Errorf("endpoint %s has no usable URL %q", name, nse.GetUrl())
		}
		return grpcutils.URLToTarget(u), nil
	}
	return "", errors.Errorf("endpoint %s is not registered", name)
}
