package domain

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	"google.golang.org/protobuf/encoding/protojson"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
)

// Network services with matches, as an operator applies them: NSM's select-forwarder,
// change-nse-dynamically and multiforwarder examples. The harness has no NetworkService
// resource; an endpoint registers the service from a file (e2e-nse's NSM_SERVICE_FILE) and
// registers it again when told to (ApplyService).

// WriteServiceFile writes service to path in the format e2e-nse's NSM_SERVICE_FILE reads.
func WriteServiceFile(path string, service *registryapi.NetworkService) error {
	data, err := protojson.Marshal(service)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// WithServiceFile makes the endpoint register the network service of path (WriteServiceFile)
// in place of a plain one.
func WithServiceFile(path string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_SERVICE_FILE="+path)
	}
}

// WithLabels gives the endpoint labels for its service, what a service's destination selectors
// match (e2e-nse's NSM_LABELS, as cmd-nse-icmp-responder's).
func WithLabels(labels map[string]string) EndpointOption {
	return func(env []string) []string {
		var pairs []string
		for k, v := range labels {
			pairs = append(pairs, k+":"+v)
		}
		return append(env, "NSM_LABELS="+strings.Join(pairs, ","))
	}
}

// WithoutServiceRegistration makes the endpoint register itself only, its service being
// registered by another endpoint (e2e-nse's NSM_REGISTER_SERVICE=false).
func WithoutServiceRegistration() EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_REGISTER_SERVICE=false")
	}
}

// ApplyService writes service to path, the endpoint's service file (WithServiceFile), and makes
// the endpoint register it again, as `kubectl apply` of a changed NetworkService; it returns
// once the endpoint says it did.
func (e *Endpoint) ApplyService(ctx context.Context, path string, service *registryapi.NetworkService) error {
	if err := WriteServiceFile(path, service); err != nil {
		return err
	}
	if err := e.signal(ctx, syscall.SIGUSR1, "SIGUSR1: network service registered again"); err != nil {
		return fmt.Errorf("%s: %w", e.Name, err)
	}
	return nil
}
