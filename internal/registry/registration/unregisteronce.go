package registration

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/common/retry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/next"
)

// unregisterOnce is sdk's retry element for Register and Find, but a Register still retrying
// when the forwarder unregisters is abandoned (after a grace, see registerGrace), and Unregister
// is tried once without waiting for the nsmgr to be ready. On SIGTERM the nsmgr may be stopping
// too (a whole-system restart): sdk's heal is then re-registering, sdk's begin queues Unregister
// behind it, and retrying either call would hold the forwarder's exit, and so its successor, for
// the whole shutdown bound. An nsmgr that misses the Unregister drops the registration when it
// expires, as it does for a forwarder that crashed.
type unregisterOnce struct {
	registryapi.NetworkServiceEndpointRegistryClient
	unregistering context.Context
}

// newUnregisterOnce returns the element and the func that abandons its Registers; Unregister, which
// sdk's begin runs only after the Register in progress, calls it after registerGrace.
func newUnregisterOnce(lifetime context.Context) (*unregisterOnce, context.CancelFunc) {
	unregistering, abandonRegisters := context.WithCancel(lifetime)
	return &unregisterOnce{retry.NewNetworkServiceEndpointRegistryClient(lifetime), unregistering}, abandonRegisters
}

func (u *unregisterOnce) Register(ctx context.Context, nse *registryapi.NetworkServiceEndpoint, opts ...grpc.CallOption) (*registryapi.NetworkServiceEndpoint, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWatching := context.AfterFunc(u.unregistering, cancel)
	defer stopWatching()
	return u.NetworkServiceEndpointRegistryClient.Register(ctx, nse, opts...)
}

func (u *unregisterOnce) Unregister(ctx context.Context, nse *registryapi.NetworkServiceEndpoint, opts ...grpc.CallOption) (*emptypb.Empty, error) {
	return next.NetworkServiceEndpointRegistryClient(ctx).Unregister(ctx, nse, append(opts, grpc.WaitForReady(false))...)
}
