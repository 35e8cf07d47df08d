package main

import (
	"context"
	"net"
	"testing"

	"github.com/edwarnicke/genericsync"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/ipam/strictvl3ipam"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/begin"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/dnscontext/vl3dns"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/ipcontext/vl3"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/adapters"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
)

// A peering Request reaches the other endpoint's vl3 server as a peer: this endpoint's own
// address only, and routes to the other endpoint's prefix and to the whole network.
func TestPeeringKeepsTheEndpointsOwnAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := peer(ctx, t, peeringDNS("172.16.1.0"))
	ipContext := conn.GetContext().GetIpContext()
	require.Equal(t, []string{"172.16.1.0/32"}, ipContext.GetSrcIpAddrs())
	require.Equal(t, []string{"172.16.0.0/32"}, ipContext.GetDstIpAddrs())
	var srcRoutes []string
	for _, r := range ipContext.GetSrcRoutes() {
		srcRoutes = append(srcRoutes, r.GetPrefix()+" via "+r.GetNextHop())
	}
	require.ElementsMatch(t, []string{
		"172.16.0.0/32 via 172.16.0.0", "172.16.0.0/24 via 172.16.0.0", "172.16.0.0/16 via 172.16.0.0",
	}, srcRoutes)
}

// Without the DNS config upstream's endpoints send, the other endpoint takes the peer for a
// client and hands it an address of its own prefix: why vl3dns's client is in the peering chain.
func TestPeeringWithoutDNSConfigIsTakenForAClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := peer(ctx, t)
	require.ElementsMatch(t, []string{"172.16.1.0/32", "172.16.0.1/32"}, conn.GetContext().GetIpContext().GetSrcIpAddrs())
}

// peer requests a connection from an endpoint holding 172.16.0.0/24 as the endpoint holding
// 172.16.1.0/24, through between.
func peer(ctx context.Context, t *testing.T, between ...networkservice.NetworkServiceClient) *networkservice.Connection {
	t.Helper()
	chain := append([]networkservice.NetworkServiceClient{begin.NewClient(), metadata.NewClient(), vl3.NewClient(ctx, vl3.NewIPAM("172.16.1.0/24"))}, between...)
	chain = append(chain, adapters.NewServerToClient(vl3.NewServer(ctx, vl3.NewIPAM("172.16.0.0/24"))))
	conn, err := next.NewNetworkServiceClient(chain...).Request(ctx, &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{Id: "peering", NetworkService: "vl3"},
	})
	require.NoError(t, err)
	return conn
}

// In a dual-stack network the peer keeps its own address in each family: each of the other
// endpoint's vl3 servers sees a source address of its family and takes the request for a peer.
func TestDualStackPeeringKeepsTheEndpointsOwnAddresses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chain := []networkservice.NetworkServiceClient{
		begin.NewClient(), metadata.NewClient(),
		vl3.NewClient(ctx, vl3.NewIPAM("172.16.1.0/24")),
		vl3.NewClient(ctx, vl3.NewIPAM("2001:db8::1:0/112")),
		peeringDNS("172.16.1.0"),
		adapters.NewServerToClient(strictvl3ipam.NewServer(ctx, vl3.NewServer,
			vl3.NewIPAM("172.16.0.0/24"), vl3.NewIPAM("2001:db8::/112"))),
	}
	conn, err := next.NewNetworkServiceClient(chain...).Request(ctx, &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{Id: "peering", NetworkService: "vl3-dual-stack"},
	})
	require.NoError(t, err)
	ipContext := conn.GetContext().GetIpContext()
	require.ElementsMatch(t, []string{"172.16.1.0/32", "2001:db8::1:0/128"}, ipContext.GetSrcIpAddrs())
	require.ElementsMatch(t, []string{"172.16.0.0/32", "2001:db8::/128"}, ipContext.GetDstIpAddrs())
}

// peeringDNS is the peering chain's vl3dns client of an endpoint whose DNS server is at own.
func peeringDNS(own string) networkservice.NetworkServiceClient {
	return vl3dns.NewClient(net.ParseIP(own), new(genericsync.Map[string, []*networkservice.DNSConfig]))
}

// With a VPP the endpoint's name is its connection to itself: its peering requests carry no
// podName (as upstream's), or the other endpoint would answer that name with the peering's
// address. In the kernel data plane both endpoints name it by its own address.
func TestPeeringRequestsNameTheEndpointOnlyWithoutAConnectionToItself(t *testing.T) {
	cfg := &config{Name: "nse-vl3-2"}
	require.Empty(t, peerLabels(cfg, &dataplane{connectsToItself: true}))
	require.Equal(t, map[string]string{"podName": "nse-vl3-2"}, peerLabels(cfg, &dataplane{}))
}
