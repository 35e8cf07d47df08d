// Command e2e-nse is an endpoint like NSM's cmd-nse-icmp-responder: it hands
// out point-to-point addresses from NSM_CIDR_PREFIX (sdk's CIDR groups, as the stock
// endpoint reads them: each group gives every client an address), accepts the kernel
// mechanism in its own network namespace (run it inside the pod's netns),
// gives each client policy routes to the NSM_POLICY_ROUTES prefixes (or, with
// NSM_POLICIES_FILE, the stock endpoint's policies file as it is) and
// registers itself through the local nsmgr. On SIGTERM it unregisters before
// exiting, so a scenario can prove the registry is left empty. SIGUSR2 and
// SIGHUP change what it hands its clients on their next refresh: the routes
// it has through each client (NSM_DST_ROUTES to NSM_REROUTE_DST_ROUTES), and
// their addresses (NSM_CIDR_PREFIX to NSM_READDRESS_CIDR_PREFIX).
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/policyroute"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/groupipam"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/strictipam"
	"github.com/networkservicemesh/sdk/pkg/registry/common/clientinfo"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/tools/cidr"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

type config struct {
	nsmgrpc.Settings
	Name                string            `default:"icmp-server"`
	ConnectTo           url.URL           `default:"unix:///var/lib/networkservicemesh/nsm.io.sock" split_words:"true"`
	ListenOn            url.URL           `split_words:"true" desc:"unix socket the nsmgr reaches this endpoint on"`
	ServiceNames        []string          `default:"icmp-responder" split_words:"true"`
	Payload             string            `default:"ETHERNET"`
	CidrPrefix          []string          `default:"169.254.0.0/16" split_words:"true" desc:"CIDR groups as cmd-nse-icmp-responder reads them: a,b hands each client an address of a and one of b; [a,b] one of a, or of b once a is full"`
	PolicyRoutes        []string          `split_words:"true" desc:"prefixes each client reaches through a policy route from its own address; PREFIX@PROTO:PORT puts a prefix in a policy of its own for that IP protocol and destination port"`
	PoliciesFile        string            `split_words:"true" desc:"YAML policies handed to every client as they are, in the stock endpoint's format (policyfile.go); replaces NSM_POLICY_ROUTES"`
	ReaddressCidrPrefix []string          `split_words:"true" desc:"where SIGHUP moves every client's addresses"`
	DstRoutes           []string          `split_words:"true" desc:"prefixes the endpoint reaches through each client"`
	RerouteDstRoutes    []string          `split_words:"true" desc:"what NSM_DST_ROUTES become after SIGUSR2"`
	DialTimeout         time.Duration     `default:"5s" split_words:"true"`
	CallLog             string            `split_words:"true" desc:"file receiving one JSON line per Request and Close served (nsmgrpc.Call)"`
	PassThroughTo       string            `split_words:"true" desc:"makes this a pass-through endpoint that asks onward for this network service (passthrough.go)"`
	Labels              map[string]string `desc:"the endpoint's labels for each of its services, what destination selectors match"`
	ServiceFile         string            `split_words:"true" desc:"protojson NetworkService registered in place of the plain one, registered again on SIGUSR1 (servicefile.go)"`
	RegisterService     bool              `default:"true" split_words:"true" desc:"false registers the endpoint only, its service being registered by another"`
	IPAMPolicy          string            `default:"polite" envconfig:"IPAM_POLICY" desc:"polite keeps whatever addresses a client brings; strict drops those outside NSM_CIDR_PREFIX first (sdk's strictipam), as cmd-nse-icmp-responder's NSM_IPAM_POLICY"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-nse:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	if err := envconfig.Process("nsm", &cfg); err != nil {
		return err
	}
	if len(cfg.CidrPrefix) == 0 {
		return fmt.Errorf("NSM_CIDR_PREFIX is empty")
	}
	if cfg.ListenOn.Scheme != "unix" {
		return fmt.Errorf("NSM_LISTEN_ON must be a unix:// URL, got %q", cfg.ListenOn.String())
	}
	// envconfig splits the list at every comma, brackets included; sdk's parser wants it whole.
	var groups cidr.Groups
	if err := groups.Decode(strings.Join(cfg.CidrPrefix, ",")); err != nil {
		return fmt.Errorf("NSM_CIDR_PREFIX %q: %w", strings.Join(cfg.CidrPrefix, ","), err)
	}
	readdressPrefixes, err := parsePrefixes("NSM_READDRESS_CIDR_PREFIX", cfg.ReaddressCidrPrefix)
	if err != nil {
		return err
	}
	ipam, err := addressing(cfg.IPAMPolicy, groups, readdressPrefixes)
	if err != nil {
		return err
	}
	changes := &contextChanges{oldPrefixes: cfg.CidrPrefix, routesBefore: cfg.DstRoutes, routesAfter: cfg.RerouteDstRoutes}
	policies := &policyRoutes{}
	for _, route := range cfg.PolicyRoutes {
		entry, parseErr := parsePolicyEntry(route)
		if parseErr != nil {
			return parseErr
		}
		policies.entries = append(policies.entries, entry)
	}
	var policyServer networkservice.NetworkServiceServer = policies
	if cfg.PoliciesFile != "" {
		fromFile, readErr := readPoliciesFile(cfg.PoliciesFile)
		if readErr != nil {
			return readErr
		}
		policyServer = policyroute.NewServer(func() []*networkservice.PolicyRoute { return fromFile })
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
	go changes.watch(ctx, readdressPrefixes)

	functionality := []networkservice.NetworkServiceServer{
		changes,
		ipam,
		policyServer,
		recvfd.NewServer(),
		mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
			kernelmech.MECHANISM: kernel.NewServer(),
		}),
		sendfd.NewServer(),
	}
	if cfg.PassThroughTo != "" {
		if err = passThroughPod(); err != nil {
			return err
		}
		crossConnect, onward := newPassThrough(ctx, &cfg.ConnectTo, cfg.PassThroughTo, cfg.Name, cfg.DialTimeout, workload.DialOptions())
		functionality = []networkservice.NetworkServiceServer{
			crossConnect,
			recvfd.NewServer(),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				kernelmech.MECHANISM: kernel.NewServer(),
			}),
			sendfd.NewServer(),
			onward,
		}
	}
	responder := endpoint.NewServer(ctx, workload.Generate,
		endpoint.WithName(cfg.Name),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies(nsmgrpc.ServerPolicies...))),
		endpoint.WithAdditionalFunctionality(functionality...),
	)
	// The server and the registration outlive the shutdown signal: the
	// registration is withdrawn first, and withdrawing it passes the listening
	// socket's inode, so the socket must still exist.
	registrationCtx, cancelRegistration := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRegistration()
	server := grpc.NewServer(append(workload.ServerOptions(), calls.ServerOptions()...)...)
	responder.Register(server)
	errCh := nsmgrpc.Serve(registrationCtx, server, cfg.ListenOn)

	registration, err := registrationOf(&cfg, workload.DialOptions())
	if err != nil {
		return err
	}
	nse, unregister, err := nsmgrpc.Register(registrationCtx, registration)
	if err != nil {
		return err
	}
	if cfg.ServiceFile != "" {
		go watchServiceFile(ctx, cfg.ServiceFile, registration)
	}
	log.FromContext(ctx).Infof("endpoint %s registered for %v at %s", nse.GetName(), nse.GetNetworkServiceNames(), cfg.ListenOn.String())

	return nsmgrpc.ServeUntilSignal(ctx, errCh, cfg.Name, unregister)
}

// registrationOf is what the endpoint registers: itself, with its labels, and its services
// (NSM_SERVICE_FILE's in place of the plain ones; none with NSM_REGISTER_SERVICE=false).
func registrationOf(cfg *config, dialOptions []grpc.DialOption) (*nsmgrpc.Endpoint, error) {
	e := &nsmgrpc.Endpoint{
		Name: cfg.Name, Services: cfg.ServiceNames, Payload: cfg.Payload, URL: cfg.ListenOn.String(),
		Labels: cfg.Labels, NoServices: !cfg.RegisterService,
		ConnectTo: &cfg.ConnectTo, DialTimeout: cfg.DialTimeout, DialOptions: dialOptions,
		NSEClients: []registryapi.NetworkServiceEndpointRegistryClient{
			clientinfo.NewNetworkServiceEndpointRegistryClient(),
			registrysendfd.NewNetworkServiceEndpointRegistryClient(),
		},
	}
	if cfg.ServiceFile != "" {
		service, err := readServiceFile(cfg.ServiceFile)
		if err != nil {
			return nil, err
		}
		e.NetworkServices = []*registryapi.NetworkService{service}
	}
	return e, nil
}

// addressing is the endpoint's IPAM: sdk's groupipam, one point2pointipam per CIDR group, as
// cmd-nse-icmp-responder's polite policy has it. The first group also holds the re-addressing
// prefixes, so that a client excluded from its old addresses gets new ones from them. The strict
// policy puts sdk's strictipam in front, which drops the addresses a client brings from outside
// all those prefixes (a previous endpoint's, after a heal) before groupipam sees them.
func addressing(policy string, groups cidr.Groups, readdressPrefixes []*net.IPNet) (networkservice.NetworkServiceServer, error) {
	groups[0] = append(groups[0], readdressPrefixes...)
	switch policy {
	case "polite":
		return groupipam.NewServer(groups), nil
	case "strict":
		var all []*net.IPNet
		for _, group := range groups {
			all = append(all, group...)
		}
		return strictipam.NewServer(func(...*net.IPNet) networkservice.NetworkServiceServer {
			return groupipam.NewServer(groups)
		}, all...), nil
	default:
		return nil, fmt.Errorf("NSM_IPAM_POLICY=%q: must be polite or strict", policy)
	}
}

func parsePrefixes(variable string, cidrs []string) ([]*net.IPNet, error) {
	var prefixes []*net.IPNet
	for _, cidr := range cidrs {
		_, prefix, err := net.ParseCIDR(cidr)
		if err != nil {
			return nil, fmt.Errorf("%s entry %q: %w", variable, cidr, err)
		}
		prefixes = append(prefixes, prefix)
	}
	return prefixes, nil
}
