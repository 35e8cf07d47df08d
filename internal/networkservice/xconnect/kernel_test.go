package xconnect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	memifapi "github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/tapv2"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

func TestKernelTapRequestAndClose(t *testing.T) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, vpptest.Sim, kernelif.Tap, kernelNextHop(nseNS, "nse-1"))

	conn := h.request(t, kernelRequest("conn-tap", nscNS, "nsc-1", payload.IP))

	creates := sentOfType[*tapv2.TapCreateV3](h.vpp)
	require.Len(t, creates, 2, "one tap toward the client, one toward the endpoint")
	toClient, toEndpoint := tapCreatedFor(t, creates, nscNS), tapCreatedFor(t, creates, nseNS)
	require.Equal(t, "nsc-1", toClient.HostIfName)
	require.Equal(t, "nse-1", toEndpoint.HostIfName)
	require.NotZero(t, toClient.TapFlags&tapv2.TAP_API_FLAG_TUN, "IP payload needs a tun")
	require.Empty(t, sentOfType[*af_packet.AfPacketCreateV3](h.vpp), "tap kind must not use af_packet")

	requireKernelEnd(t, nscNS, "nsc-1", "server-conn-tap", nscAddress)
	requireKernelEnd(t, nseNS, "nse-1", "client-conn-tap", nseAddress)

	tags := sentOfType[*interfaces.SwInterfaceTagAddDel](h.vpp)
	require.Len(t, tags, 2)
	forwarderConnID := conn.GetPath().GetPathSegments()[1].GetId()
	for _, tag := range tags {
		require.True(t, tag.IsAdd)
		require.Equal(t, forwarderConnID, tag.Tag, "VPP interfaces are tagged with the forwarder's connection ID")
	}

	crossConnects := sentOfType[*l3xc.L3xcUpdate](h.vpp)
	require.NotEmpty(t, crossConnects, "IP payload is cross-connected with l3xc")
	tagged := map[uint32]bool{}
	for _, tag := range tags {
		tagged[uint32(tag.SwIfIndex)] = true
	}
	for _, xc := range crossConnects {
		require.True(t, tagged[uint32(xc.L3xc.SwIfIndex)], "l3xc on an interface the chain did not create")
		require.NotEmpty(t, xc.L3xc.Paths)
		require.True(t, tagged[xc.L3xc.Paths[0].SwIfIndex], "l3xc toward an interface the chain did not create")
		require.NotEqual(t, uint32(xc.L3xc.SwIfIndex), xc.L3xc.Paths[0].SwIfIndex, "l3xc must lead to the other side")
	}

	h.close(t, conn)

	deletes := sentOfType[*tapv2.TapDeleteV2](h.vpp)
	require.Len(t, deletes, 2)
	require.NotEmpty(t, sentOfType[*l3xc.L3xcDel](h.vpp))
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "client end left behind")
	require.Nil(t, linkIn(t, nseNS, "nse-1"), "endpoint end left behind")
	require.Equal(t, 1, h.hop.closed(), "Close must reach the next hop")
}

func TestKernelVethRequestAndClose(t *testing.T) {
	vpptest.Each(t, testKernelVethRequestAndClose)
}

func testKernelVethRequestAndClose(t *testing.T, backend vpptest.Backend) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, backend, kernelif.Veth, kernelNextHop(nseNS, "nse-1"))

	conn := h.request(t, kernelRequest("conn-veth", nscNS, "nsc-1", payload.IP))

	require.Empty(t, sentOfType[*tapv2.TapCreateV3](h.vpp), "veth kind must not create taps")
	afPackets := sentOfType[*af_packet.AfPacketCreateV3](h.vpp)
	require.Len(t, afPackets, 2, "VPP opens the forwarder end of both veth pairs")

	for _, end := range []struct{ netns, name, alias, address string }{
		{nscNS, "nsc-1", "server-conn-veth", nscAddress},
		{nseNS, "nse-1", "client-conn-veth", nseAddress},
	} {
		link := requireKernelEnd(t, end.netns, end.name, end.alias, end.address)
		require.Equal(t, "veth", link.Type())
		// A veth's parent index is its peer's index in the peer's namespace.
		peer, err := netlink.LinkByIndex(link.Attrs().ParentIndex)
		require.NoError(t, err, "the forwarder end must stay in the forwarder's namespace")
		opened := false
		for _, create := range afPackets {
			opened = opened || create.HostIfName == peer.Attrs().Name
		}
		require.True(t, opened, "af_packet_create_v3 was not sent for %s", peer.Attrs().Name)
	}

	h.close(t, conn)

	require.Len(t, sentOfType[*af_packet.AfPacketDelete](h.vpp), 2)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "client end left behind")
	require.Nil(t, linkIn(t, nseNS, "nse-1"), "endpoint end left behind")
}

func TestMalformedRequestIsRefusedBeforeVPPIsTouched(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
		h := newHarness(t, backend, kindOn(backend), kernelNextHop(nseNS, "nse-1"))
		request := kernelRequest("conn-bad", nscNS, "nsc-1", payload.IP)
		request.GetConnection().GetContext().GetIpContext().SrcIpAddrs = []string{"172.16.0.1"}

		_, err := h.nsmgr.Request(h.ctx, request)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.Contains(t, err.Error(), `"172.16.0.1"`)
		require.Empty(t, h.vpp.Requests()[h.vpp.initRequests:], "the forwarder sent VPP something")
		require.Nil(t, linkIn(t, nscNS, "nsc-1"))
	})
}

func TestMemifRequestAndClose(t *testing.T) {
	vpptest.Each(t, testMemifRequestAndClose)
}

func testMemifRequestAndClose(t *testing.T, backend vpptest.Backend) {
	nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
	h := newHarness(t, backend, kindOn(backend), kernelNextHop(nseNS, "nse-1"))
	request := kernelRequest("conn-memif", nscNS, "nsc-1", payload.IP)
	request.MechanismPreferences = []*networkservice.Mechanism{memifmech.NewAbstract(nscNS)}

	conn := h.request(t, request)

	sockets := sentOfType[*memifapi.MemifSocketFilenameAddDelV2](h.vpp)
	require.Len(t, sockets, 1)
	require.True(t, sockets[0].IsAdd)
	require.True(t, strings.HasPrefix(sockets[0].SocketFilename, "abstract:"), "an abstract socket, got %q", sockets[0].SocketFilename)
	_, socketNetns, found := strings.Cut(sockets[0].SocketFilename, ",netns_name=")
	require.True(t, found, "the socket must name a namespace, got %q", sockets[0].SocketFilename)
	require.Equal(t, netnsID(nscNS), netnsID(socketNetns), "the socket must live in the client's namespace, got %q", sockets[0].SocketFilename)
	memifs := sentOfType[*memifapi.MemifCreate](h.vpp)
	require.Len(t, memifs, 1)
	require.Equal(t, memifapi.MEMIF_ROLE_API_MASTER, memifs[0].Role, "the forwarder serves the client's memif")
	require.Equal(t, memifapi.MEMIF_MODE_API_IP, memifs[0].Mode)
	require.Equal(t, memifmech.MECHANISM, conn.GetMechanism().GetType())
	requireKernelEnd(t, nseNS, "nse-1", "client-conn-memif", nseAddress)

	h.close(t, conn)

	require.Len(t, sentOfType[*memifapi.MemifDelete](h.vpp), 1)
	removedSockets := sentOfType[*memifapi.MemifSocketFilenameAddDelV2](h.vpp)
	require.Len(t, removedSockets, 2)
	require.False(t, removedSockets[1].IsAdd)
	require.Nil(t, linkIn(t, nseNS, "nse-1"))
}

// nsmgr refreshes with the connection the forwarder returned; the forwarder refreshes onward with
// the connection the next hop returned, whose namespace it now holds as a descriptor of its own.
func TestKernelRefreshKeepsTheDataPath(t *testing.T) {
	vpptest.Each(t, testKernelRefreshKeepsTheDataPath)
}

func testKernelRefreshKeepsTheDataPath(t *testing.T, backend vpptest.Backend) {
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	h := newHarness(t, backend, kindOn(backend), kernelNextHop(nse.Path(), "nse-1"))
	request := kernelRequest("conn-refresh", nsc.Path(), "nsc-1", payload.IP)
	conn := h.request(t, request.Clone())

	request.Connection = conn.Clone()
	conn = h.request(t, request)

	created := len(sentOfType[*tapv2.TapCreateV3](h.vpp)) + len(sentOfType[*af_packet.AfPacketCreateV3](h.vpp))
	require.Equal(t, 2, created, "a refresh creates nothing new")
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 5*time.Second))
	h.close(t, conn)
	h.vpp.requireOnlyUplink(t)
}

// An endpoint can fail a Request after answering it (its sendfd failing to send its namespace
// back, say); the client heals by sending the same Request again, which must go through.
func TestRequestAfterAFailedAnswerGoesThrough(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
		hop := kernelNextHop(nseNS, "nse-1")
		hop.failAnswers.Store(1)
		h := newHarness(t, backend, kindOn(backend), hop)

		ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
		defer cancel()
		_, err := h.nsmgr.Request(ctx, kernelRequest("conn-retry", nscNS, "nsc-1", payload.IP))
		require.ErrorContains(t, err, "answer failed on its way back")

		conn := h.request(t, kernelRequest("conn-retry", nscNS, "nsc-1", payload.IP))
		requireBothEndsThenNothingAfterClose(t, h, conn, nscNS, nseNS)
	})
}

// The same for a refresh: the endpoint fails its answer to one, and the client's next refresh
// must go through, on the connection's existing kernel ends.
func TestRefreshAfterAFailedAnswerGoesThrough(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
		hop := kernelNextHop(nseNS, "nse-1")
		h := newHarness(t, backend, kindOn(backend), hop)
		conn := h.request(t, kernelRequest("conn-refresh", nscNS, "nsc-1", payload.IP))

		hop.failAnswers.Store(1)
		refresh := kernelRequest("conn-refresh", nscNS, "nsc-1", payload.IP)
		refresh.Connection = conn.Clone()
		ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
		defer cancel()
		_, err := h.nsmgr.Request(ctx, refresh.Clone())
		require.ErrorContains(t, err, "answer failed on its way back")

		conn = h.request(t, refresh.Clone())
		requireBothEndsThenNothingAfterClose(t, h, conn, nscNS, nseNS)
	})
}

// requireBothEndsThenNothingAfterClose checks conn's kernel ends, nsc-1 and nse-1, then closes it
// and checks both are gone.
func requireBothEndsThenNothingAfterClose(t *testing.T, h *harness, conn *networkservice.Connection, nscNS, nseNS string) {
	t.Helper()
	requireKernelEnd(t, nscNS, "nsc-1", "server-"+conn.GetId(), nscAddress)
	requireKernelEnd(t, nseNS, "nse-1", "client-"+conn.GetId(), nseAddress)
	h.close(t, conn)
	require.Nil(t, linkIn(t, nscNS, "nsc-1"), "client end left behind")
	require.Nil(t, linkIn(t, nseNS, "nse-1"), "endpoint end left behind")
}
