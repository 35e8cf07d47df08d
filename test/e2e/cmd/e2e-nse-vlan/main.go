// Command e2e-nse-vlan is an endpoint like NSM's cmd-nse-remote-vlan: it takes no part in the
// data path. It accepts only the vlan mechanism, answering it with NSM_VLAN_ID and the via label
// NSM_VIA; the forwarder then bridges its client to a VLAN sub-interface of the host device that
// its NSM_DEVICE_SELECTOR_FILE gives for that label, and whatever is on that VLAN of the trunk is
// the service. NSM_VLAN_ID=0 is the untagged trunk itself (upstream's `vlan: 0`): sdk-vpp's vlan
// mechanism then bridges the client to the device, no sub-interface. It hands each client an
// address of each NSM_CIDR_PREFIX group with the prefix's length (sdk's singlepointipam per
// group, as the stock endpoint), so the client reaches the hosts on the VLAN directly. Every
// service of NSM_SERVICE_NAMES gets the same VLAN (upstream's blue and green bridges share VLAN
// 300).
// It listens on TCP and registers straight with the registry (NSM_CONNECT_TO), as the stock
// endpoint does from nsm-system: the forwarder then dials it over TCP, which is what makes it
// offer remote mechanisms. On SIGTERM it unregisters before exiting.
package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/groupipam"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/singlepointipam"
	"github.com/networkservicemesh/sdk/pkg/tools/cidr"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name         string   `default:"nse-remote-vlan"`
	ConnectTo    url.URL  `split_words:"true" desc:"the registry"`
	ListenOn     url.URL  `split_words:"true" desc:"tcp:// URL the forwarders dial"`
	ServiceNames []string `split_words:"true"`
	CidrPrefix   []string `split_words:"true"`
	VlanID       uint32   `envconfig:"VLAN_ID" desc:"1 to 4094; 0 is the untagged trunk"`
	Via          string
	DialTimeout  time.Duration `default:"5s" split_words:"true"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nse-vlan:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	switch {
	case cfg.ListenOn.Scheme != "tcp":
		return fmt.Errorf("NSM_LISTEN_ON must be a tcp:// URL, got %q", cfg.ListenOn.String())
	case len(cfg.ServiceNames) == 0:
		return fmt.Errorf("NSM_SERVICE_NAMES is empty")
	case len(cfg.CidrPrefix) == 0:
		return fmt.Errorf("NSM_CIDR_PREFIX is empty")
	case cfg.VlanID > 4094:
		return fmt.Errorf("NSM_VLAN_ID=%d: a VLAN ID is 1 to 4094, or 0 for untagged", cfg.VlanID)
	case cfg.Via == "":
		return fmt.Errorf("NSM_VIA is empty")
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

	responder := endpoint.NewServer(ctx, workload.Generate,
		endpoint.WithName(cfg.Name),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies(nsmgrpc.ServerPolicies...))),
		endpoint.WithAdditionalFunctionality(
			// As cmd-nse-remote-vlan: one singlepointipam per CIDR group, so that a client gets
			// an address of each (172.10.0.0/24,100:200::/64: one IPv4 and one IPv6).
			groupipam.NewServer(groups, groupipam.WithCustomIPAMServer(singlepointipam.NewServer)),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				vlanmech.MECHANISM: &remoteVlan{vlanID: cfg.VlanID, via: cfg.Via},
			}),
		),
	)
	// The server and the registration outlive the shutdown signal, so that the registration is
	// withdrawn while the endpoint still answers.
	registrationCtx, cancelRegistration := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRegistration()
	server := grpc.NewServer(workload.ServerOptions()...)
	responder.Register(server)
	errCh := nsmgrpc.Serve(registrationCtx, server, cfg.ListenOn)

	nse, unregister, err := register(registrationCtx, &cfg, workload.DialOptions())
	if err != nil {
		return err
	}
	log.FromContext(ctx).Infof("endpoint %s registered for %v at %s: vlan %d via %s", nse.GetName(), nse.GetNetworkServiceNames(), cfg.ListenOn.String(), cfg.VlanID, cfg.Via)

	return nsmgrpc.ServeUntilSignal(ctx, errCh, cfg.Name, unregister)
}

// register registers the network services (their payload is Ethernet: the VLAN carries frames)
// and the endpoint with the registry, and returns how to withdraw the endpoint.
func register(ctx context.Context, cfg *config, dialOptions []grpc.DialOption) (*registryapi.NetworkServiceEndpoint, func() error, error) {
	return nsmgrpc.Register(ctx, &nsmgrpc.Endpoint{
		Name: cfg.Name, Services: cfg.ServiceNames, Payload: payload.Ethernet, URL: cfg.ListenOn.String(),
		ConnectTo: &cfg.ConnectTo, DialTimeout: cfg.DialTimeout, DialOptions: dialOptions,
	})
}
