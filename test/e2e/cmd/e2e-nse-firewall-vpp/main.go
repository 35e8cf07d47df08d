// Command e2e-nse-firewall-vpp is a pass-through endpoint whose data plane is a VPP of its own,
// like NSM's cmd-nse-firewall-vpp, the firewall and pass-through endpoints of deployments-k8s
// features/nse-composition: run in a pod's network namespace beside a VPP (NSM_VPP_API_SOCKET),
// it accepts the memif mechanism only (its VPP the memif master, the forwarder joining it), asks
// its nsmgr onward for the same network service over memif (its VPP the slave of the forwarder's
// memif) with its own labels in place of its caller's (sdk's passthrough client, so that the
// service's matches choose the next hop by this endpoint's labels), and cross-connects the two
// memifs in its VPP. With NSM_ACL_CONFIG_PATH, sdk-vpp's acl element puts the file's rules
// (aclconfig.go) on the incoming memif. It registers itself, never its service: the service,
// with its matches, is someone else's (a NetworkService resource upstream). On SIGTERM it
// withdraws its registration before exiting.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/kelseyhightower/envconfig"
	"go.fd.io/govpp"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/acl"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/xconnect"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/clienturl"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/connect"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanismtranslation"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/passthrough"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/registry/common/clientinfo"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name          string            `default:"firewall-server"`
	ConnectTo     url.URL           `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	ListenOn      url.URL           `split_words:"true" desc:"unix socket the nsmgr reaches this endpoint on"`
	ServiceName   string            `split_words:"true" desc:"the network service it provides and asks onward for"`
	Labels        map[string]string `desc:"the endpoint's labels: what destination selectors match, and its onward requests' source labels"`
	ACLConfigPath string            `envconfig:"ACL_CONFIG_PATH" desc:"ACL rules in cmd-nse-firewall-vpp's format; empty: no ACL"`
	VppAPISocket  string            `envconfig:"VPP_API_SOCKET" desc:"this endpoint's own VPP"`
	DialTimeout   time.Duration     `default:"5s" split_words:"true"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nse-firewall-vpp:", err)
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
	if cfg.ServiceName == "" {
		return errors.New("NSM_SERVICE_NAME is empty")
	}
	if cfg.VppAPISocket == "" {
		return errors.New("NSM_VPP_API_SOCKET is empty: this endpoint drives a VPP of its own")
	}
	rules, err := readACLConfig(cfg.ACLConfigPath)
	if err != nil {
		return err
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

	// Composed as cmd-nse-firewall-vpp composes it: the onward client has no authorize client,
	// no heal and no refresh; the caller's client heals and refreshes the whole chain through
	// this endpoint (e2e-nse's passthrough.go says why in full).
	onward := client.NewClient(ctx,
		client.WithName(cfg.Name),
		client.WithoutRefresh(),
		client.WithDialTimeout(cfg.DialTimeout),
		client.WithDialOptions(workload.DialOptions()...),
		client.WithAdditionalFunctionality(
			metadata.NewClient(),
			mechanismtranslation.NewClient(),
			passthrough.NewClient(cfg.Labels),
			up.NewClient(ctx, vppConn),
			xconnect.NewClient(vppConn),
			memif.NewClient(ctx, vppConn),
			sendfd.NewClient(),
			recvfd.NewClient(),
		),
	)
	firewall := endpoint.NewServer(ctx, workload.Generate,
		endpoint.WithName(cfg.Name),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies(nsmgrpc.ServerPolicies...))),
		endpoint.WithAdditionalFunctionality(
			recvfd.NewServer(),
			sendfd.NewServer(),
			up.NewServer(ctx, vppConn),
			clienturl.NewServer(&cfg.ConnectTo),
			xconnect.NewServer(vppConn),
			// Not in cmd-nse-firewall-vpp: without it every connection leaves its ACLs in this
			// VPP (aclrelease.go).
			&aclRelease{vppConn: vppConn},
			acl.NewServer(vppConn, rules),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				memifmech.MECHANISM: chain.NewNetworkServiceServer(memif.NewServer(ctx, vppConn)),
			}),
			connect.NewServer(onward),
		),
	)
	// The server and the registration outlive the shutdown signal: the registration is
	// withdrawn first, and withdrawing it passes the listening socket's inode.
	registrationCtx, cancelRegistration := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRegistration()
	server := grpc.NewServer(workload.ServerOptions()...)
	firewall.Register(server)
	errCh := nsmgrpc.Serve(registrationCtx, server, cfg.ListenOn)

	nse, unregister, err := nsmgrpc.Register(registrationCtx, &nsmgrpc.Endpoint{
		Name: cfg.Name, Services: []string{cfg.ServiceName}, URL: cfg.ListenOn.String(),
		Labels: cfg.Labels, NoServices: true,
		ConnectTo: &cfg.ConnectTo, DialTimeout: cfg.DialTimeout, DialOptions: workload.DialOptions(),
		NSEClients: []registryapi.NetworkServiceEndpointRegistryClient{
			clientinfo.NewNetworkServiceEndpointRegistryClient(),
			registrysendfd.NewNetworkServiceEndpointRegistryClient(),
		},
	})
	if err != nil {
		return err
	}
	log.FromContext(ctx).Infof("endpoint %s registered for %v at %s, memif through VPP %s, %d ACL rules",
		nse.GetName(), nse.GetNetworkServiceNames(), cfg.ListenOn.String(), cfg.VppAPISocket, len(rules))

	return nsmgrpc.ServeUntilSignal(ctx, errCh, cfg.Name, unregister)
}
