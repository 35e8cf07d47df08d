package xconnect

import (
	"context"
	"net"
	"slices"
	"sync"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	ipsecapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	kernelapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	memifapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	vxlanapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	wireguardapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/cleanup"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/connect"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/discover"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/filtermechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanismpriority"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanismtranslation"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/roundrobin"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/updatepath"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/token"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/ethernetcontext"

	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/afxdppinhole"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext/mtu"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/ipsec"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/nsmonitor"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/pinhole"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/tag"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	vppxconnect "github.com/networkservicemesh/sdk-vpp/pkg/networkservice/xconnect"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/xconnect/l2bridgedomain"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/peerkey"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/replyfd"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestfd"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/registry/registrylookup"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/monitorretry"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/nexthopclose"
)

// NewServer returns the forwarder endpoint. tunnelIP is the node's address for vxlan,
// wireguard and ipsec tunnels.
func NewServer(ctx context.Context, tokenGenerator token.GeneratorFunc, vppConn api.Connection, tunnelIP net.IP, opts ...Option) (endpoint.Endpoint, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(o)
	}
	if err := validate(vppConn, tunnelIP, o); err != nil {
		return nil, err
	}
	ikev2KeyFile, err := ipsec.GenerateRSAKey()
	if err != nil {
		return nil, errors.Wrap(err, "generating the IKEv2 key for ipsec")
	}
	// Discovery is a one-shot lookup per Request (the caller heals), over one connection to the
	// nsmgr instead of a dial per Find.
	registryClients, err := registrylookup.New(ctx, o.clientURL,
		registrylookup.WithDialTimeout(o.dialTimeout), registrylookup.WithDialOptions(o.dialOptions...))
	if err != nil {
		return nil, err
	}
	nsClient, nseClient := registryClients.NetworkServices, registryClients.NetworkServiceEndpoints
	pinholeMutex := new(sync.Mutex)
	// One lock per connection for everything that changes it: the chain's Requests, Closes and
	// expiry Closes, and the releases of a previous run's connections made outside the chain.
	locks := expiry.NewLocks()
	o.leftovers.SerializeWith(locks.Do)
	o.leftovers.CloseNextHopsWith(nexthopclose.New(nseClient, o.dialTimeout, o.dialOptions...))

	forwarder := endpoint.NewServer(ctx, tokenGenerator,
		endpoint.WithName(o.name),
		endpoint.WithAuthorizeServer(o.authorizeServer),
		endpoint.WithAuthorizeMonitorConnectionServer(o.authorizeMonitorServer),
		endpoint.WithAdditionalFunctionality(
			// Times everything behind authorization, failures included.
			fwdmetrics.NewServer(),
			// First to decide: a hostile or oversized Request is refused before any element acts,
			// and touches nothing, not even what a previous run left.
			requestcheck.NewServer(o.requestCheckOptions...),
			// Before every element that holds resources, so that it covers them all.
			expiry.NewServer(ctx, append(o.expiryOptions, expiry.WithLocks(locks))...),
			// Namespaces are opened only as the descriptors the peer passed.
			recvnetns.NewServer(),
			replyfd.NewServer(),
			// Behind recvnetns, which hands them the client's namespace; before every element that programs.
			journal.NewServer(ctx, o.journal, o.journalCleanup),
			restore.NewServer(o.leftovers),
			discover.NewServer(nsClient, nseClient),
			roundrobin.NewServer(),
			metrics.NewServer(ctx, vppConn, o.metricsOptions...),
			up.NewServer(ctx, vppConn),
			vppxconnect.NewServer(vppConn),
			// Above l2bridgedomain, which keeps the bridge domains it makes in memory only.
			journal.NewBridgeDomainServer(o.journal, vppConn),
			l2bridgedomain.NewServer(vppConn),
			newKernelContextServer(),
			ethernetcontext.NewVFServer(),
			// Above tag: the client's side is on disk once it exists, long before the commit.
			journal.NewCreatedServer(o.journal),
			tag.NewServer(ctx, vppConn),
			mtu.NewServer(vppConn),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				memifapi.MECHANISM:     memif.NewServer(ctx, vppConn, memif.WithDirectMemif(), memif.WithChangeNetNS()),
				kernelapi.MECHANISM:    newKernelMechanismServer(vppConn, o.kernelInterface, o.journal),
				vxlanapi.MECHANISM:     vxlan.NewServer(vppConn, tunnelIP, o.vxlanOptions...),
				wireguardapi.MECHANISM: wireguard.NewServer(vppConn, tunnelIP),
				ipsecapi.MECHANISM:     ipsec.NewServer(vppConn, tunnelIP, ipsec.WithIKEv2PrivateKey(ikev2KeyFile)),
			}),
			// Behind the wireguard and ipsec servers: it acts on the way back, before they build.
			peerkey.NewServer(vppConn),
			afxdppinhole.NewServer(),
			pinhole.NewServer(vppConn, pinhole.WithSharedMutex(pinholeMutex)),
			connect.NewServer(newOnwardClient(ctx, vppConn, tunnelIP, o, ikev2KeyFile, pinholeMutex, nseClient)),
		),
	)
	return &closesLeftovers{
		Endpoint:      forwarder,
		closeLeftover: chain.NewNetworkServiceServer(updatepath.NewServer(o.name), restore.NewCloseServer(o.leftovers, o.authorizeServer)),
	}, nil
}

// closesLeftovers is the forwarder endpoint with a second look at each Close: sdk's begin drops
// the Close of a connection this run never established, which is what a previous run's connection
// is until it is requested again, so its leftover would wait for the whole grace period. The copy
// of the Close goes through updatepath, as in the endpoint, so that it names this forwarder's
// segment, and then restore's close element, which authorizes it as the endpoint does.
type closesLeftovers struct {
	endpoint.Endpoint
	closeLeftover networkservice.NetworkServiceServer
}

// Register serves e, not the endpoint it wraps, whose own Register would bypass Close.
func (e *closesLeftovers) Register(s *grpc.Server) {
	grpcutils.RegisterHealthServices(s, e)
	networkservice.RegisterNetworkServiceServer(s, e)
	networkservice.RegisterMonitorConnectionServer(s, e)
}

func (e *closesLeftovers) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	_, releaseErr := e.closeLeftover.Close(ctx, conn.Clone())
	_, err := e.Endpoint.Close(ctx, conn)
	if err == nil {
		err = releaseErr
	}
	return &empty.Empty{}, err
}

func validate(vppConn api.Connection, tunnelIP net.IP, o *options) error {
	switch {
	case vppConn == nil:
		return errors.New("xconnect: no VPP connection")
	case tunnelIP == nil || tunnelIP.IsUnspecified():
		return errors.Errorf("xconnect: tunnel IP %q is not a usable address", tunnelIP)
	case o.kernelInterface != kernelif.Auto && o.kernelInterface != kernelif.Tap && o.kernelInterface != kernelif.Veth:
		return errors.Errorf("xconnect: unknown kernel interface type %v", o.kernelInterface)
	case o.clientURL == nil:
		return errors.New("xconnect: no URL to connect onward to")
	}
	return nil
}

// newOnwardClient builds the client half of the cross-connect: the mechanism toward the next hop.
// It never refreshes by itself: the incoming Request's refresh drives it. Its dials carry the
// monitorretry interceptor because sdk's monitor server relays next-hop events through them: a
// broken stream gets one re-open bounded by the dial timeout, and the registry says meanwhile
// whether the connection's endpoint is still there.
func newOnwardClient(ctx context.Context, vppConn api.Connection, tunnelIP net.IP, o *options, ikev2KeyFile string, pinholeMutex *sync.Mutex,
	registryNSE registryapi.NetworkServiceEndpointRegistryClient) networkservice.NetworkServiceClient {
	elements := []networkservice.NetworkServiceClient{
		cleanup.NewClient(ctx, o.cleanupOptions...),
		mechanismtranslation.NewClient(),
		newKernelContextClient(),
		metrics.NewClient(ctx, vppConn, o.metricsOptions...),
		up.NewClient(ctx, vppConn),
		mtu.NewClient(vppConn),
		journal.NewCreatedClient(o.journal),
		newNextHopTagClient(vppConn),
		memif.NewClient(ctx, vppConn, memif.WithChangeNetNS()),
		newKernelMechanismClient(vppConn, o.kernelInterface, o.journal),
		vxlan.NewClient(vppConn, tunnelIP, o.vxlanOptions...),
		wireguard.NewClient(vppConn, tunnelIP),
		ipsec.NewClient(vppConn, tunnelIP, ipsec.WithIKEv2PrivateKey(ikev2KeyFile)),
		// Behind the wireguard and ipsec clients: it sees the next hop's answer before they build.
		peerkey.NewClient(vppConn),
		vlan.NewClient(vppConn, o.vlanDomainToDevice),
		// Behind every mechanism, before recvnetns: on the way back they see the next hop's answer
		// first, its namespace already received.
		restore.NewClient(o.leftovers),
		journal.NewClient(o.journal),
		filtermechanisms.NewClient(),
		mechanismpriority.NewClient(o.mechanismPriority...),
		afxdppinhole.NewClient(),
		pinhole.NewClient(vppConn, pinhole.WithSharedMutex(pinholeMutex)),
		recvnetns.NewClient(),
		nsmonitor.NewClient(ctx),
		requestfd.NewClient(),
		recvnetns.NewWireClient(),
	}
	return client.NewClient(ctx,
		client.WithoutRefresh(),
		client.WithName(o.name),
		client.WithDialOptions(slices.Concat(o.dialOptions, []grpc.DialOption{monitorretry.DialOption(slices.Concat([]monitorretry.Option{
			monitorretry.WithReopenTimeout(o.dialTimeout),
			monitorretry.WithEndpointLookup(endpointLookup(registryNSE)),
		}, o.monitorRetryOptions)...)})...),
		client.WithDialTimeout(o.dialTimeout),
		client.WithAdditionalFunctionality(elements...),
	)
}
