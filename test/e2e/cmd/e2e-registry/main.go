// Command e2e-registry is the harness's NSM registry: the sdk's memory
// registry chain behind SPIFFE mTLS, configured like cmd-registry-memory by
// NSM_* variables. `e2e-registry find` lists the registered endpoints as JSON
// lines, which is how scenarios prove that nothing stays registered.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/chains/memory"
	registryauthorize "github.com/networkservicemesh/sdk/pkg/registry/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	ListenOn     []url.URL     `default:"unix:///var/lib/networkservicemesh/registry.sock" split_words:"true"`
	ConnectTo    url.URL       `default:"unix:///var/lib/networkservicemesh/registry.sock" split_words:"true" desc:"registry to query in find mode"`
	ExpirePeriod time.Duration `default:"1m" split_words:"true" desc:"default NSE expiration"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-registry:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	ctx, workload, stop, err := nsmgrpc.Start("e2e-registry", cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()

	if len(os.Args) > 1 {
		if os.Args[1] != "find" {
			return fmt.Errorf("unknown mode %q (only \"find\")", os.Args[1])
		}
		cc, dialErr := grpc.NewClient(grpcutils.URLToTarget(&cfg.ConnectTo), workload.DialOptions()...)
		if dialErr != nil {
			return dialErr
		}
		defer func() { _ = cc.Close() }()
		return printEndpoints(ctx, registryapi.NewNetworkServiceEndpointRegistryClient(cc), os.Stdout)
	}

	registry := memory.NewServer(ctx, workload.Generate,
		memory.WithDefaultExpiration(cfg.ExpirePeriod),
		memory.WithDialOptions(workload.DialOptions()...),
		memory.WithAuthorizeNSRegistryServer(registryauthorize.NewNetworkServiceRegistryServer(
			registryauthorize.WithPolicies(nsmgrpc.RegistryPolicies...))),
		memory.WithAuthorizeNSERegistryServer(registryauthorize.NewNetworkServiceEndpointRegistryServer(
			registryauthorize.WithPolicies(nsmgrpc.RegistryPolicies...))),
	)
	server := grpc.NewServer(workload.ServerOptions()...)
	registry.Register(server)
	errCh := nsmgrpc.Serve(ctx, server, cfg.ListenOn...)
	log.FromContext(ctx).Infof("registry serving on %v", cfg.ListenOn)
	select {
	case <-ctx.Done():
		return nil
	case err = <-errCh:
		return err
	}
}

// endpointRecord is one line of `find` output.
type endpointRecord struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Services []string `json:"services"`
}

func printEndpoints(ctx context.Context, client registryapi.NetworkServiceEndpointRegistryClient, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	stream, err := client.Find(ctx, &registryapi.NetworkServiceEndpointQuery{
		NetworkServiceEndpoint: &registryapi.NetworkServiceEndpoint{},
	})
	if err != nil {
		return err
	}
	encoder := json.NewEncoder(out)
	for {
		resp, recvErr := stream.Recv()
		if errors.Is(recvErr, io.EOF) {
			return nil
		}
		if recvErr != nil {
			return recvErr
		}
		nse := resp.GetNetworkServiceEndpoint()
		if resp.GetDeleted() {
			continue
		}
		if err = encoder.Encode(endpointRecord{Name: nse.GetName(), URL: nse.GetUrl(), Services: nse.GetNetworkServiceNames()}); err != nil {
			return err
		}
	}
}
