// Command e2e-nsmgr is one node's Network Service Manager: the sdk's nsmgr
// chain behind SPIFFE mTLS, with the stock cmd-nsmgr's authorization, serving
// local workloads on a unix socket and other nodes on TCP. Configured by NSM_*
// variables like cmd-nsmgr, and dialing as it does (blocking dials bounded by
// NSM_DIAL_TIMEOUT, 750ms by default). NSM_CONFIG_DIR stands for the pod's config
// volume, where the chain reads the excluded prefixes.
package main

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/edwarnicke/genericsync"
	"github.com/kelseyhightower/envconfig"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/nsmgr"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	registryauthorize "github.com/networkservicemesh/sdk/pkg/registry/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	monitorauthorize "github.com/networkservicemesh/sdk/pkg/tools/monitorconnection/authorize"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name                        string        `default:"nsmgr" desc:"name of this nsmgr"`
	ListenOn                    []url.URL     `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true" desc:"the first tcp URL is the one other nodes reach"`
	AdvertiseURL                url.URL       `split_words:"true" desc:"the URL other nodes reach this nsmgr at, when not the first tcp URL it listens on (a proxy in front of it)"`
	RegistryURL                 url.URL       `split_words:"true"`
	DialTimeout                 time.Duration `default:"750ms" split_words:"true"`
	ForwarderNetworkServiceName string        `default:"forwarder" split_words:"true"`
	CallLog                     string        `split_words:"true" desc:"file receiving one JSON line per Request and Close served or made (nsmgrpc.Call)"`
	ConfigDir                   string        `split_words:"true" desc:"directory standing for the pod's config volume: bound over /var/lib/networkservicemesh/config, where the nsmgr chain reads excluded_prefixes.yaml (configdir.go)"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nsmgr:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	publicURL, err := publishableURL(cfg.ListenOn)
	if err != nil {
		return err
	}
	if cfg.AdvertiseURL.String() != "" {
		publicURL = &cfg.AdvertiseURL
	}
	if cfg.RegistryURL.String() == "" {
		return fmt.Errorf("NSM_REGISTRY_URL is required")
	}
	if cfg.ConfigDir != "" {
		exited, code, configErr := runWithConfigDir(cfg.ConfigDir)
		switch {
		case configErr != nil:
			return configErr
		case exited:
			os.Exit(code)
		}
	}
	ctx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	calls, err := nsmgrpc.NewCallLog(ctx, cfg.CallLog)
	if err != nil {
		return err
	}

	// One map shared by the request and monitor authorizers lets a workload
	// monitor exactly the connections it holds.
	var connectionsBySpiffeID genericsync.Map[spiffeid.ID, *genericsync.Map[string, struct{}]]
	mgr := nsmgr.NewServer(ctx, workload.Generate,
		nsmgr.WithName(cfg.Name),
		nsmgr.WithURL(publicURL.String()),
		nsmgr.WithRegistry(&cfg.RegistryURL),
		nsmgr.WithAuthorizeServer(authorize.NewServer(
			authorize.WithPolicies(nsmgrpc.ServerPolicies...),
			authorize.WithSpiffeIDConnectionMap(&connectionsBySpiffeID))),
		nsmgr.WithAuthorizeMonitorConnectionServer(monitorauthorize.NewMonitorConnectionServer(
			monitorauthorize.WithSpiffeIDConnectionMap(&connectionsBySpiffeID))),
		nsmgr.WithAuthorizeNSRegistryServer(registryauthorize.NewNetworkServiceRegistryServer(
			registryauthorize.WithPolicies(nsmgrpc.RegistryPolicies...))),
		nsmgr.WithAuthorizeNSERegistryServer(registryauthorize.NewNetworkServiceEndpointRegistryServer(
			registryauthorize.WithPolicies(nsmgrpc.RegistryPolicies...))),
		nsmgr.WithAuthorizeNSRegistryClient(registryauthorize.NewNetworkServiceRegistryClient(
			registryauthorize.WithPolicies(nsmgrpc.RegistryClientPolicies...))),
		nsmgr.WithAuthorizeNSERegistryClient(registryauthorize.NewNetworkServiceEndpointRegistryClient(
			registryauthorize.WithPolicies(nsmgrpc.RegistryClientPolicies...))),
		nsmgr.WithDefaultExpiration(cfg.MaxTokenLifetime),
		nsmgr.WithDialOptions(append(workload.NsmgrDialOptions(), calls.DialOptions()...)...),
		nsmgr.WithDialTimeout(cfg.DialTimeout),
		nsmgr.WithForwarderServiceName(cfg.ForwarderNetworkServiceName),
	)
	server := grpc.NewServer(append(workload.ServerOptions(), calls.ServerOptions()...)...)
	mgr.Register(server)
	errCh := nsmgrpc.Serve(ctx, server, cfg.ListenOn...)
	log.FromContext(ctx).Infof("nsmgr %s serving on %v, reachable as %s", cfg.Name, cfg.ListenOn, publicURL.String())
	select {
	case <-ctx.Done():
		return nil
	case err = <-errCh:
		return err
	}
}

// publishableURL is the URL other nodes dial: the first TCP listen URL with a
// concrete address, as the stock nsmgr chooses it.
func publishableURL(listenOn []url.URL) (*url.URL, error) {
	for i := range listenOn {
		u := listenOn[i]
		if u.Scheme == "tcp" && u.Hostname() != "" && u.Hostname() != "0.0.0.0" && u.Hostname() != "::" {
			return &u, nil
		}
	}
	return nil, fmt.Errorf("NSM_LISTEN_ON %v has no tcp URL with a concrete address for other nodes", listenOn)
}
