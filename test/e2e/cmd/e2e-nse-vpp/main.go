// Command e2e-nse-vpp is an endpoint whose data plane is a VPP of its own, like NSM's
// cmd-nse-icmp-responder-vpp (deployments-k8s apps/nse-memif): run in a pod's network namespace
// beside a VPP (NSM_VPP_API_SOCKET), it accepts the memif mechanism only. For each connection its
// VPP creates the memif master in this namespace, which the forwarder joins as the slave, and
// gets the endpoint's addresses and routes of the IP context (sdk-vpp's server elements, so that
// `vppctl ping` from this VPP reaches the client). It hands out point-to-point addresses from
// NSM_CIDR_PREFIX (sdk's CIDR groups, as e2e-nse) and registers itself through the local nsmgr.
// On SIGTERM it withdraws its registration before exiting, as e2e-nse does.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"go.fd.io/govpp"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/groupipam"
	"github.com/networkservicemesh/sdk/pkg/registry/common/clientinfo"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/cidr"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name            string            `default:"nse-memif"`
	ConnectTo       url.URL           `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	ListenOn        url.URL           `split_words:"true" desc:"unix socket the nsmgr reaches this endpoint on"`
	ServiceNames    []string          `default:"icmp-responder" split_words:"true"`
	Payload         string            `default:"ETHERNET" desc:"the services' payload: ETHERNET or IP (the memif's mode follows the connection's)"`
	CidrPrefix      []string          `default:"169.254.0.0/16" split_words:"true" desc:"CIDR groups as e2e-nse reads them"`
	Labels          map[string]string `desc:"the endpoint's labels for each of its services"`
	RegisterService bool              `default:"true" split_words:"true" desc:"false registers the endpoint only"`
	VppAPISocket    string            `envconfig:"VPP_API_SOCKET" desc:"this endpoint's own VPP"`
	DialTimeout     time.Duration     `default:"5s" split_words:"true"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nse-vpp:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	if cfg.ListenOn.Scheme != "unix" {
		return fmt.Errorf("NSM_LISTEN_ON must be a unix:// URL, got %q", cfg.ListenOn.String())
	}
	if cfg.VppAPISocket == "" {
		return errors.New("NSM_VPP_API_SOCKET is empty: this endpoint drives a VPP of its own")
	}
	// envconfig splits the list at every comma, brackets included; sdk's parser wants it whole.
	var groups cidr.Groups
	if err := groups.Decode(strings.Join(cfg.CidrPrefix, ",")); err != nil {
		return fmt.Errorf("NSM_CIDR_PREFIX %q: %w", strings.Join(cfg.CidrPrefix, ","), err)
	}
	ctx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	vppConn, err := govpp.Connect(cfg.VppAPISocket)
	if err != nil {
		return fmt.Errorf("connecting to VPP at %s: %w", cfg.VppAPISocket, err)
	}
	defer vppConn.Disconnect()

	responder := endpoint.NewServer(ctx, workload.Generate,
		endpoint.WithName(cfg.Name),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies(nsmgrpc.ServerPolicies...))),
		endpoint.WithAdditionalFunctionality(
			groupipam.NewServer(groups),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				// The forwarder joins the memif through this pod's namespace, which sendfd
				// passes it; up and connectioncontext act once memif has created the interface.
				memifmech.MECHANISM: chain.NewNetworkServiceServer(
					sendfd.NewServer(),
					up.NewServer(ctx, vppConn),
					connectioncontext.NewServer(vppConn),
					memif.NewServer(ctx, vppConn),
				),
			}),
		),
	)
	// The server and the registration outlive the shutdown signal: the registration is
	// withdrawn first, and withdrawing it passes the listening socket's inode.
	registrationCtx, cancelRegistration := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRegistration()
	server := grpc.NewServer(workload.ServerOptions()...)
	responder.Register(server)
	errCh := nsmgrpc.Serve(registrationCtx, server, cfg.ListenOn)

	nse, unregister, err := nsmgrpc.Register(registrationCtx, &nsmgrpc.Endpoint{
		Name: cfg.Name, Services: cfg.ServiceNames, Payload: cfg.Payload, URL: cfg.ListenOn.String(),
		Labels: cfg.Labels, NoServices: !cfg.RegisterService,
		ConnectTo: &cfg.ConnectTo, DialTimeout: cfg.DialTimeout, DialOptions: workload.DialOptions(),
		NSEClients: []registryapi.NetworkServiceEndpointRegistryClient{
			clientinfo.NewNetworkServiceEndpointRegistryClient(),
			registrysendfd.NewNetworkServiceEndpointRegistryClient(),
		},
	})
	if err != nil {
		return err
	}
	log.FromContext(ctx).Infof("endpoint %s registered for %v at %s, memif into VPP %s", nse.GetName(), nse.GetNetworkServiceNames(), cfg.ListenOn.String(), cfg.VppAPISocket)

	return nsmgrpc.ServeUntilSignal(ctx, errCh, cfg.Name, unregister)
}
