// Package registrationtest is a test stand-in for the registry behind nsmgr: it records what the
// forwarder registers and unregisters.
package registrationtest

import (
	"context"
	"sync"

	"github.com/golang/protobuf/ptypes/empty"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
)

// Recorder is a NetworkServiceEndpointRegistryServer that keeps every call it gets.
type Recorder struct {
	mu           sync.Mutex
	registered   []*registryapi.NetworkServiceEndpoint
	unregistered []string
}

// Register records the endpoint and accepts it as it is.
func (r *Recorder) Register(_ context.Context, nse *registryapi.NetworkServiceEndpoint) (*registryapi.NetworkServiceEndpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registered = append(r.registered, nse)
	return nse, nil
}

// Find finds nothing.
func (r *Recorder) Find(*registryapi.NetworkServiceEndpointQuery, registryapi.NetworkServiceEndpointRegistry_FindServer) error {
	return nil
}

// Unregister records the endpoint's name.
func (r *Recorder) Unregister(_ context.Context, nse *registryapi.NetworkServiceEndpoint) (*empty.Empty, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unregistered = append(r.unregistered, nse.GetName())
	return new(empty.Empty), nil
}

// Snapshot returns copies of what was registered and the names unregistered so far.
func (r *Recorder) Snapshot() (registered []*registryapi.NetworkServiceEndpoint, unregistered []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(registered, r.registered...), append(unregistered, r.unregistered...)
}
