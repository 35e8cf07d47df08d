package xconnect_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	vxlanapi "github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// endpointNode is the forwarder on the endpoint's node as the client's forwarder reaches it: over
// TCP, through an nsmgr that has already chosen the endpoint.
type endpointNode struct {
	forwarder endpoint.Endpoint
	nseURL    *url.URL
}

func (n *endpointNode) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return n.forwarder.Request(clienturlctx.WithClientURL(ctx, n.nseURL), request)
}

func (n *endpointNode) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return n.forwarder.Close(clienturlctx.WithClientURL(ctx, n.nseURL), conn)
}

func (n *endpointNode) serve(t *testing.T) *url.URL {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer()
	networkservice.RegisterNetworkServiceServer(server, n)
	networkservice.RegisterMonitorConnectionServer(server, n.forwarder)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return &url.URL{Scheme: "tcp", Host: listener.Addr().String()}
}

// Two nodes, each with its VPP and forwarder: the client's forwarder reaches the endpoint's over
// vxlan between the nodes' uplinks, and a ping crosses both VPPs and the tunnel between them.
func TestVxlanBetweenTwoNodesCarriesTraffic(t *testing.T) {
	nodeA, nodeB := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	vppsimtest.Veth(t, nodeA, uplinkHostName, prefixOf(tunnelIP), nodeB, uplinkHostName, prefixOf(remoteIP))
	vppA := startTestVPPOn(t, nodeA, uplinkHostName, tunnelIP)
	vppB := startTestVPPOn(t, nodeB, uplinkHostName, remoteIP)
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	nodeBURL := (&endpointNode{
		forwarder: newForwarder(ctx, t, vppB, vppB, kernelif.Tap),
		nseURL:    kernelNextHop(nse.Path(), "nse-1").serve(ctx, t),
	}).serve(t)
	forwarderA := serveForwarder(t, newForwarder(ctx, t, vppA, vppA, kernelif.Tap, xconnect.WithMechanismPriority([]string{vxlanmech.MECHANISM})))
	requestCtx, cancelRequest := context.WithTimeout(clienturlctx.WithClientURL(ctx, nodeBURL), 20*time.Second)
	defer cancelRequest()

	conn, err := forwarderA.Request(requestCtx, kernelRequest("conn-two-nodes", nsc.Path(), "nsc-1", payload.Ethernet))
	require.NoError(t, err)

	tunnelsA, tunnelsB := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](vppA), sentOfType[*vxlanapi.VxlanAddDelTunnelV3](vppB)
	require.Len(t, tunnelsA, 1)
	require.Len(t, tunnelsB, 1)
	require.Equal(t, tunnelsA[0].Vni, tunnelsB[0].Vni, "both ends of the tunnel must agree on the VNI")
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second), "client to endpoint across the nodes")
	require.NoError(t, vppsimtest.Ping(nse, nseIP, nscIP, 5*time.Second), "endpoint to client across the nodes")

	_, err = forwarderA.Close(requestCtx, conn)
	require.NoError(t, err)

	require.Error(t, vppsimtest.Ping(nsc, nscIP, nseIP, time.Second), "the data path outlived Close")
	vppA.requireOnlyUplink(t)
	vppB.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nsc.Path()), "links left in the client namespace")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nse.Path()), "links left in the endpoint namespace")
}
