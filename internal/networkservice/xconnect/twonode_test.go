package xconnect_test

import (
	"context"
	"net"
	"net/url"
	"sync"
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

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// endpointNode is the forwarder on the endpoint's node as the client's forwarder reaches it: over
// TCP, through an nsmgr that has already chosen the endpoint.
type endpointNode struct {
	mu        sync.Mutex
	forwarder endpoint.Endpoint
	nseURL    *url.URL
}

// setForwarder replaces the node's forwarder, as a restart does.
func (n *endpointNode) setForwarder(forwarder endpoint.Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forwarder = forwarder
}

func (n *endpointNode) current() endpoint.Endpoint {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.forwarder
}

func (n *endpointNode) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return n.current().Request(clienturlctx.WithClientURL(ctx, n.nseURL), request)
}

func (n *endpointNode) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return n.current().Close(clienturlctx.WithClientURL(ctx, n.nseURL), conn)
}

func (n *endpointNode) MonitorConnections(selector *networkservice.MonitorScopeSelector, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
	return n.current().MonitorConnections(selector, srv)
}

func (n *endpointNode) serve(t *testing.T) *url.URL {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer()
	networkservice.RegisterNetworkServiceServer(server, n)
	networkservice.RegisterMonitorConnectionServer(server, n)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return &url.URL{Scheme: "tcp", Host: listener.Addr().String()}
}

// twoNodes are two nodes, each with its VPP of one backend, joined by their uplinks: node A holds
// tunnelIP, node B remoteIP. On real VPP both VPPs share the test process's namespace (the
// veth mechanism needs it, see startTestVPP) and each takes one end of a veth pair there; on the
// simulator each has a node namespace and the forwarders give clients taps.
type twoNodes struct {
	kind       kernelif.Kind
	vppA, vppB *testVPP
}

func startTwoNodes(t *testing.T, backend vpptest.Backend) *twoNodes {
	t.Helper()
	n := &twoNodes{kind: kindOn(backend)}
	if n.kind == kernelif.Veth {
		uplinkA, uplinkB := ownNamespaceVethPair(t)
		n.vppA = startTestVPPOn(t, backend, nil, uplinkA, tunnelIP)
		n.vppB = startTestVPPOn(t, backend, nil, uplinkB, remoteIP)
		return n
	}
	nodeA, nodeB := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	vppsimtest.Veth(t, nodeA, uplinkHostName, prefixOf(tunnelIP), nodeB, uplinkHostName, prefixOf(remoteIP))
	n.vppA = startTestVPPOn(t, backend, nodeA, uplinkHostName, tunnelIP)
	n.vppB = startTestVPPOn(t, backend, nodeB, uplinkHostName, remoteIP)
	return n
}

// serveEndpointNode runs node B's forwarder, onward to a kernel endpoint in nse, and returns its
// URL: what node A's forwarder reaches through nsmgr.
func (n *twoNodes) serveEndpointNode(ctx context.Context, t *testing.T, nse *vppsimtest.Netns) *url.URL {
	t.Helper()
	return (&endpointNode{
		forwarder: newForwarder(ctx, t, n.vppB, n.vppB, n.kind),
		nseURL:    kernelNextHop(nse.Path(), "nse-1").serve(ctx, t),
	}).serve(t)
}

// Two nodes, each with its VPP and forwarder: the client's forwarder reaches the endpoint's over
// vxlan between the nodes' uplinks, and a ping crosses both VPPs and the tunnel between them.
func TestVxlanBetweenTwoNodesCarriesTraffic(t *testing.T) {
	vpptest.Each(t, testVxlanBetweenTwoNodesCarriesTraffic)
}

func testVxlanBetweenTwoNodesCarriesTraffic(t *testing.T, backend vpptest.Backend) {
	nodes := startTwoNodes(t, backend)
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	nodeBURL := nodes.serveEndpointNode(ctx, t, nse)
	forwarderA := serveForwarder(t, newForwarder(ctx, t, nodes.vppA, nodes.vppA, nodes.kind, xconnect.WithMechanismPriority([]string{vxlanmech.MECHANISM})))
	requestCtx, cancelRequest := context.WithTimeout(clienturlctx.WithClientURL(ctx, nodeBURL), 20*time.Second)
	defer cancelRequest()

	conn, err := forwarderA.Request(requestCtx, kernelRequest("conn-two-nodes", nsc.Path(), "nsc-1", payload.Ethernet))
	require.NoError(t, err)

	tunnelsA, tunnelsB := sentOfType[*vxlanapi.VxlanAddDelTunnelV3](nodes.vppA), sentOfType[*vxlanapi.VxlanAddDelTunnelV3](nodes.vppB)
	require.Len(t, tunnelsA, 1)
	require.Len(t, tunnelsB, 1)
	require.Equal(t, tunnelsA[0].Vni, tunnelsB[0].Vni, "both ends of the tunnel must agree on the VNI")
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second), "client to endpoint across the nodes")
	require.NoError(t, vppsimtest.Ping(nse, nseIP, nscIP, 5*time.Second), "endpoint to client across the nodes")

	_, err = forwarderA.Close(requestCtx, conn)
	require.NoError(t, err)

	require.Error(t, vppsimtest.Ping(nsc, nscIP, nseIP, time.Second), "the data path outlived Close")
	nodes.vppA.requireOnlyUplink(t)
	nodes.vppB.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nsc.Path()), "links left in the client namespace")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nse.Path()), "links left in the endpoint namespace")
}

// Both nodes' forwarders die and come back next to their VPPs: the connection requested again
// adopts both vxlan tunnel ends (the previous VNI is asked for again) and both pods' taps, so VPP
// creates or deletes nothing and the pods keep their interfaces.
func TestRestartedForwardersAdoptAVxlanConnection(t *testing.T) {
	vpptest.Each(t, testRestartedForwardersAdoptAVxlanConnection)
}

func testRestartedForwardersAdoptAVxlanConnection(t *testing.T, backend vpptest.Backend) {
	nodes := startTwoNodes(t, backend)
	vppA, vppB := nodes.vppA, nodes.vppB
	// On real VPP both forwarders' veth ends share the test process's namespace: no node namespace.
	var nodeA, nodeB *vppsimtest.Netns
	if nodes.kind == kernelif.Tap {
		nodeA, nodeB = vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	}
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	journalA, journalB := t.TempDir(), t.TempDir()
	vxlanFirst := xconnect.WithMechanismPriority([]string{vxlanmech.MECHANISM})

	nodeBEndpoint := &endpointNode{nseURL: kernelNextHop(nse.Path(), "nse-1").serve(ctx, t)}
	nodeBURL := nodeBEndpoint.serve(t)
	lifeB := startLife(t, vppB, nodes.kind, journalB, nodeB)
	nodeBEndpoint.setForwarder(lifeB.endpoint)
	lifeA := startLife(t, vppA, nodes.kind, journalA, nodeA, vxlanFirst)
	requestCtx, cancelRequest := context.WithTimeout(clienturlctx.WithClientURL(ctx, nodeBURL), 20*time.Second)
	defer cancelRequest()
	request := kernelRequest("conn-vxlan-restart", nsc.Path(), "nsc-1", payload.Ethernet)
	conn, err := lifeA.forwarder.Request(requestCtx, request.Clone())
	require.NoError(t, err)
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second))
	clientSide, endpointSide := podLink(t, nsc.Path(), "nsc-1"), podLink(t, nse.Path(), "nse-1")
	lifeA.die()
	lifeB.die()

	lifeB = startLife(t, vppB, nodes.kind, journalB, nodeB)
	nodeBEndpoint.setForwarder(lifeB.endpoint)
	lifeA = startLife(t, vppA, nodes.kind, journalA, nodeA, vxlanFirst)
	sinceA, sinceB := len(vppA.Requests()), len(vppB.Requests())
	request.Connection = conn.Clone()
	conn, err = lifeA.forwarder.Request(requestCtx, request)
	require.NoError(t, err, "re-Request through both restarted forwarders")
	require.Empty(t, creations(vppA, sinceA), "the client's node created or deleted VPP interfaces")
	require.Empty(t, creations(vppB, sinceB), "the endpoint's node created or deleted VPP interfaces")
	require.Equal(t, clientSide, podLink(t, nsc.Path(), "nsc-1"))
	require.Equal(t, endpointSide, podLink(t, nse.Path(), "nse-1"))
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second), "the adopted data path across the nodes")

	_, err = lifeA.forwarder.Close(requestCtx, conn)
	require.NoError(t, err)
	vppA.requireOnlyUplink(t)
	vppB.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nsc.Path()))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, nse.Path()))
}
