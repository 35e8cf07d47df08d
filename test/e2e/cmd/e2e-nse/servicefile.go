package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/protobuf/encoding/protojson"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// readServiceFile reads NSM_SERVICE_FILE: one NetworkService in protojson, matches included,
// what an operator applies as a NetworkService resource in Kubernetes (NSM's select-forwarder
// and change-nse-dynamically examples).
func readServiceFile(path string) (*registryapi.NetworkService, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NSM_SERVICE_FILE: %w", err)
	}
	service := &registryapi.NetworkService{}
	if err = protojson.Unmarshal(data, service); err != nil {
		return nil, fmt.Errorf("NSM_SERVICE_FILE %s: %w", path, err)
	}
	if service.GetName() == "" {
		return nil, fmt.Errorf("NSM_SERVICE_FILE %s: the service has no name", path)
	}
	return service, nil
}

// watchServiceFile registers NSM_SERVICE_FILE again on every SIGUSR1 until ctx ends, as
// `kubectl apply` of a changed NetworkService: the harness rewrites the file, then signals.
func watchServiceFile(ctx context.Context, path string, e *nsmgrpc.Endpoint) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	defer signal.Stop(signals)
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
		}
		service, err := readServiceFile(path)
		if err == nil {
			err = nsmgrpc.RegisterServices(ctx, e, service)
		}
		if err != nil {
			log.FromContext(ctx).Errorf("SIGUSR1: %v", err)
			continue
		}
		log.FromContext(ctx).Infof("SIGUSR1: network service registered again: %s", protojson.Format(service))
	}
}
