// Command e2e-nse-vl3 is a vl3 endpoint composed from the sdk as NSM's cmd-nse-vl3-vpp is, with
// its data plane in its pod's kernel in place of a VPP of its own: it takes a prefix from each
// vl3 IPAM server of NSM_PREFIX_SERVER_URL (a comma-separated list, as upstream's: one server per
// IP family for a dual-stack network), hands every client an address of each (sdk's
// strictvl3ipam over one vl3 server per prefix), accepts the kernel mechanism in its own network
// namespace and routes between its clients and the other vl3 endpoints with the pod's IP
// forwarding. With NSM_VPP_API_SOCKET it drives a VPP of its own in its pod instead, as upstream
// does: memif connections into a VRF of that VPP (vpp.go). Once registered it asks for the same service from every vl3 endpoint registered
// before it (peers.go), so that every two endpoints of the network share one connection, through
// the forwarders. With a VPP it also connects to itself as upstream's does (self.go), a kernel
// connection into its pod. It serves DNS names of its clients and of itself as upstream's does
// (dns.go).
//
// `e2e-nse-vl3 ipam` is the vl3 IPAM server instead, as NSM's cmd-ipam-vl3 (ipam.go).
//
// Without a VPP, the forwarder-facing part is still there: the clients' connections and the
// endpoints' peering connections are kernel connections with the vl3 IP contexts (/32
// addresses, routes through the endpoint's address), where upstream's are memifs into the
// endpoint's VPP (a loopback, a VRF); the simulator runs this variant.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/ipam/strictvl3ipam"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/ipcontext/vl3"
	"github.com/networkservicemesh/sdk/pkg/registry/common/clientinfo"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name             string        `default:"vl3-server"`
	ConnectTo        url.URL       `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	ListenOn         url.URL       `split_words:"true" desc:"unix socket the nsmgr reaches this endpoint on (the IPAM server's, with ipam)"`
	ServiceNames     []string      `default:"vl3" split_words:"true"`
	Payload          string        `default:"IP" desc:"the service's payload; IP as upstream's vl3 service"`
	PrefixServerURLs []url.URL     `envconfig:"PREFIX_SERVER_URL" desc:"the vl3 IPAM servers (e2e-nse-vl3 ipam), one per IP family"`
	RequestTimeout   time.Duration `default:"15s" split_words:"true" desc:"each try of a peering Request"`
	DialTimeout      time.Duration `default:"5s" split_words:"true"`
	VppAPISocket     string        `envconfig:"VPP_API_SOCKET" desc:"this endpoint's own VPP; unset: the pod's kernel routes"`
	// Upstream VPP lacks the ping API sdk-vpp's peering check needs; the check then pings
	// through the CLI socket (liveness.go).
	VppCliSocket string `envconfig:"VPP_CLI_SOCKET" desc:"with a VPP: its CLI socket, for the peering check on upstream VPP"`
	Vppctl       string `envconfig:"VPPCTL" desc:"with a VPP: the vppctl binary, for the peering check on upstream VPP"`
	// As cmd-nse-vl3-vpp's: the peering connections' data-path check from the endpoint's VPP.
	LivenessCheckInterval time.Duration `default:"1200ms" split_words:"true" desc:"with a VPP: between data-path checks of a peering"`
	LivenessCheckTimeout  time.Duration `default:"1s" split_words:"true" desc:"with a VPP: each data-path check of a peering"`
	// As cmd-nse-vl3-vpp's: the DNS names of each connection (and of the endpoint itself).
	DNSTemplates []string `default:"{{ index .Labels \"podName\" }}.{{ .NetworkService }}." split_words:"true" desc:"go templates of the DNS names each connection's addresses get"`
	// The IPAM server's: the network and the prefix length of each endpoint's share of it.
	Prefix     string `default:"172.16.0.0/16" desc:"ipam: the vl3 network"`
	PrefixSize uint8  `default:"24" split_words:"true" desc:"ipam: the length of each endpoint's prefix"`
}

func main() {
	run := runEndpoint
	if len(os.Args) > 1 && os.Args[1] == "ipam" {
		run = runIPAM
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nse-vl3:", err)
		os.Exit(1)
	}
}

func runEndpoint() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	if cfg.ListenOn.Scheme != "unix" {
		return fmt.Errorf("NSM_LISTEN_ON must be a unix:// URL, got %q", cfg.ListenOn.String())
	}
	if len(cfg.PrefixServerURLs) == 0 {
		return errors.New("NSM_PREFIX_SERVER_URL is empty")
	}
	if len(cfg.ServiceNames) == 0 {
		return errors.New("NSM_SERVICE_NAMES is empty")
	}
	ctx, workload, stop, err := nsmgrpc.Start(cfg.Name, cfg.Settings)
	if err != nil {
		return err
	}
	defer stop()
	dialOptions := workload.DialOptions()

	// The chains live past the shutdown signal: peering connections are closed after it.
	chainCtx, cancelChains := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelChains()
	plane, err := newDataplane(chainCtx, &cfg)
	if err != nil {
		return err
	}
	defer plane.close()
	var pools []*vl3.IPAM
	var prefixes []string
	for i := range cfg.PrefixServerURLs {
		server := &cfg.PrefixServerURLs[i]
		pool := new(vl3.IPAM)
		prefix, prefixErr := followPrefixServer(chainCtx, server, dialOptions, pool)
		if prefixErr != nil {
			return prefixErr
		}
		// The harness reads the endpoint's addresses from these lines (vl3EndpointAddrs).
		log.FromContext(ctx).Infof("vl3 prefix %s from %s", prefix, server.String())
		pools, prefixes = append(pools, pool), append(prefixes, prefix)
	}

	dns, err := newVl3DNS(chainCtx, cfg.DNSTemplates, dnsPort)
	if err != nil {
		return err
	}

	responder := endpoint.NewServer(chainCtx, workload.Generate,
		endpoint.WithName(cfg.Name),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies(nsmgrpc.ServerPolicies...))),
		endpoint.WithAdditionalFunctionality(append([]networkservice.NetworkServiceServer{
			dns.server,
			strictvl3ipam.NewServer(chainCtx, vl3.NewServer, pools...),
		}, plane.server...)...),
	)
	server := grpc.NewServer(workload.ServerOptions()...)
	responder.Register(server)
	errCh := nsmgrpc.Serve(chainCtx, server, cfg.ListenOn)

	registration := &nsmgrpc.Endpoint{
		Name: cfg.Name, Services: cfg.ServiceNames, Payload: cfg.Payload, URL: cfg.ListenOn.String(),
		ConnectTo: &cfg.ConnectTo, DialTimeout: cfg.DialTimeout, DialOptions: dialOptions,
		NSEClients: []registryapi.NetworkServiceEndpointRegistryClient{
			clientinfo.NewNetworkServiceEndpointRegistryClient(),
			registrysendfd.NewNetworkServiceEndpointRegistryClient(),
		},
	}
	nse, unregister, err := nsmgrpc.Register(chainCtx, registration)
	if err != nil {
		return err
	}
	// As upstream: the connection to itself before the peerings, which carry its address.
	var self *selfConnection
	if plane.connectsToItself {
		if self, err = connectToItself(chainCtx, ctx, &cfg, dialOptions); err != nil {
			return errors.Join(err, unregister())
		}
		dns.serveAt(self.addr())
		log.FromContext(ctx).Infof("connected to itself: %s", self.addr())
	} else {
		// The kernel data plane's DNS server address is its first prefix's first address.
		_, first, _ := net.ParseCIDR(prefixes[0])
		dns.serveAt(first.IP)
		if err = dns.nameItself(cfg.Name, cfg.ServiceNames[0]); err != nil {
			return errors.Join(err, unregister())
		}
	}
	peers := newPeering(chainCtx, &cfg, dialOptions, pools, dns.client(), plane)
	if err = peers.connectToEarlierEndpoints(ctx, nse); err != nil {
		return errors.Join(err, peers.closeAll(), self.close(), unregister())
	}
	// The harness waits for this line (domain.StartVl3Endpoint): registered and peered.
	log.FromContext(ctx).Infof("endpoint %s registered for %v at %s, prefix %s, data plane %s", nse.GetName(), nse.GetNetworkServiceNames(), cfg.ListenOn.String(), strings.Join(prefixes, ", "), plane.what)
	select {
	case <-ctx.Done():
	case err = <-errCh:
	}
	// The peering connections go first, then the connection to itself (as upstream), then the
	// registration, so that the nsmgr still finds this endpoint for those Closes.
	return errors.Join(err, peers.closeAll(), self.close(), unregister())
}
