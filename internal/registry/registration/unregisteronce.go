package registration

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/common/retry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/next"
)

// unregisterOnce is sdk's retry element for Register and Find, but tries Unregister once and
// without waiting for the nsmgr to be ready: on SIGTERM the nsmgr may be stopping too (a
// whole-system restart), and retrying would hold the forwarder's exit, and so its successor,
// for the whole shutdown bound. An nsmgr that misses the Unregister drops the registration when
// it expires, as it does for a forwarder that crashed.
type unregisterOnce struct {
	registryapi.NetworkServiceEndpointRegistryClient
}

func newUnregisterOnce(lifetime context.Context) registryapi.NetworkServiceEndpointRegistryClient {
	return &unregisterOnce{retry.NewNetworkServiceEndpointRegistryClient(lifetime)}
}

func (u *unregisterOnce) Unregister(ctx context.Context, nse *registryapi.NetworkServiceEndpoint, opts ...grpc.CallOption) (*emptypb.Empty, error) {
	return next.NetworkServiceEndpointRegistryClient(ctx).Unregister(ctx, nse, append(opts, grpc.WaitForReady(false))...)
}
