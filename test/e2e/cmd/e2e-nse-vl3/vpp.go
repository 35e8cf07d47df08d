package main

import (
	"context"
	"fmt"

	"go.fd.io/govpp"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext/ipcontext/ipaddress"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext/ipcontext/routes"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext/ipcontext/unnumbered"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/connectioncontext/mtu"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/loopback"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/tag"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/up"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/vrf"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/mtu/vl3mtu"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
)

// vppDataplane is the endpoint's own VPP, composed as cmd-nse-vl3-vpp composes it from sdk-vpp:
// one VRF per IP family for the whole vl3 network, a loopback in it holding the endpoint's
// address, and every connection, a client's or a peer's, a memif into that VRF (unnumbered to
// the loopback, with routes to the other side's addresses). The endpoint serves memif only: its
// VPP is the memif master of its clients' connections, and the forwarder joins as the slave;
// on its own peering connections its VPP is the client side. A peering connection's data path is
// checked by pinging from this VPP (liveness.go), so that an interrupted memif heals
// (vl3-dataplane-interrupt).
func vppDataplane(ctx context.Context, cfg *config) (*dataplane, error) {
	vppConn, err := govpp.Connect(cfg.VppAPISocket)
	if err != nil {
		return nil, fmt.Errorf("connecting to VPP at %s: %w", cfg.VppAPISocket, err)
	}
	// The server and the client share the network's VRFs and loopback: one of each per service.
	vrfOptions := []vrf.Option{vrf.WithSharedMap(vrf.NewMap()), vrf.WithLoadInterface(loopback.Load)}
	loopOptions := []loopback.Option{loopback.WithSharedMap(loopback.NewMap())}
	return &dataplane{
		what: "VPP " + cfg.VppAPISocket,
		server: []networkservice.NetworkServiceServer{
			vl3mtu.NewServer(),
			up.NewServer(ctx, vppConn, up.WithLoadSwIfIndex(loopback.Load)),
			ipaddress.NewServer(vppConn, ipaddress.WithLoadSwIfIndex(loopback.Load)),
			unnumbered.NewServer(vppConn, loopback.Load),
			vrf.NewServer(vppConn, vrfOptions...),
			loopback.NewServer(vppConn, loopOptions...),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				memif.MECHANISM: chain.NewNetworkServiceServer(
					sendfd.NewServer(),
					up.NewServer(ctx, vppConn),
					mtu.NewServer(vppConn),
					routes.NewServer(vppConn),
					tag.NewServer(ctx, vppConn),
					memif.NewServer(ctx, vppConn),
				),
			}),
		},
		client: []networkservice.NetworkServiceClient{
			vl3mtu.NewClient(),
			up.NewClient(ctx, vppConn, up.WithLoadSwIfIndex(loopback.Load)),
			ipaddress.NewClient(vppConn, ipaddress.WithLoadSwIfIndex(loopback.Load)),
			loopback.NewClient(vppConn, loopOptions...),
			up.NewClient(ctx, vppConn),
			mtu.NewClient(vppConn),
			routes.NewClient(vppConn),
			unnumbered.NewClient(vppConn, loopback.Load),
			vrf.NewClient(vppConn, vrfOptions...),
			memif.NewClient(ctx, vppConn),
			sendfd.NewClient(),
			recvfd.NewClient(),
		},
		heal: []heal.Option{
			heal.WithLivenessCheck(peeringLivenessCheck(ctx, cfg, vppConn)),
			heal.WithLivenessCheckInterval(cfg.LivenessCheckInterval),
			heal.WithLivenessCheckTimeout(cfg.LivenessCheckTimeout),
		},
		close:            vppConn.Disconnect,
		connectsToItself: true,
	}, nil
}
