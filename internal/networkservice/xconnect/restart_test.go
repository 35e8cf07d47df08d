package xconnect_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// restartPeers are a client and its endpoint, each in a namespace of its own, and the next hop
// that hands the endpoint's kernel interface to the forwarder.
type restartPeers struct {
	nsc, nse *vppsimtest.Netns
	hopURL   *url.URL
}

func newRestartPeers(ctx context.Context, t *testing.T) *restartPeers {
	t.Helper()
	p := &restartPeers{nsc: vppsimtest.NewNetns(t, netnsPrefix), nse: vppsimtest.NewNetns(t, netnsPrefix)}
	p.hopURL = kernelNextHop(p.nse.Path(), "nse-1").serve(ctx, t)
	return p
}

func (p *restartPeers) request(t *testing.T, forwarder *nsmgr, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(clienturlctx.WithClientURL(context.Background(), p.hopURL), 20*time.Second)
	defer cancel()
	return forwarder.Request(ctx, request)
}

// life is one run of the forwarder next to an external VPP: its own VPP connection and journal.
type life struct {
	endpoint  endpoint.Endpoint
	forwarder *nsmgr // reaches endpoint as nsmgr does
	vppConn   *vpptest.Conn
	journal   *journal.Journal
	leftovers *restore.Leftovers
}

// startLife starts a run on journalDir, which the previous run must have left (died). The veth
// kind's forwarder ends are in the test process's namespace, the forwarder's; a run of the tap
// kind looks for them in node, where it leaves none.
func startLife(t *testing.T, vpp *testVPP, kind kernelif.Kind, journalDir string, node *vppsimtest.Netns, opts ...xconnect.Option) *life {
	t.Helper()
	// Never cancelled before the test ends: a dead run closes nothing.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &life{vppConn: vpp.Dial(t)}
	var err error
	l.journal, err = journal.Open(ctx, journalDir)
	require.NoError(t, err)
	forwarderNetns := &netlink.Handle{}
	if node != nil {
		ns, err := netns.GetFromPath(node.Path())
		require.NoError(t, err)
		t.Cleanup(func() { _ = ns.Close() })
		forwarderNetns, err = netlink.NewHandleAt(ns)
		require.NoError(t, err)
		t.Cleanup(forwarderNetns.Close)
	}
	releaser := restore.NewReleaser(l.vppConn, markedroutes.NewServer(), restore.WithForwarderNetns(forwarderNetns))
	l.leftovers, err = restore.Scan(ctx, releaser, l.journal, kind.Resolve() == kernelif.Tap)
	require.NoError(t, err)
	l.endpoint = newForwarder(ctx, t, vpp, l.vppConn, kind, append([]xconnect.Option{
		xconnect.WithJournal(l.journal, releaser.Release),
		xconnect.WithLeftovers(l.leftovers),
	}, opts...)...)
	l.forwarder = serveForwarder(t, l.endpoint)
	return l
}

// die ends the run as a SIGKILL does: no Close, VPP and the kernel keep everything; the VPP
// connection and the journal's lock go with the process.
func (l *life) die() {
	l.vppConn.Disconnect()
	_ = l.journal.Close()
}

// creations counts the interfaces created or deleted in VPP since the simulator recorded from
// requests on.
func creations(vpp *testVPP, from int) []string {
	var out []string
	for _, msg := range vpp.Requests()[from:] {
		switch msg.(type) {
		case *tapv2.TapCreateV3, *tapv2.TapDeleteV2, *af_packet.AfPacketCreateV3, *af_packet.AfPacketDelete,
			*vxlan.VxlanAddDelTunnelV3:
			out = append(out, msg.GetMessageName())
		}
	}
	return out
}

// podLink is what the pod sees of its NSM interface: the ifindex and MAC survive only if nothing
// deleted and re-created it.
func podLink(t *testing.T, path, name string) string {
	t.Helper()
	link := linkIn(t, path, name)
	require.NotNil(t, link, "no %s in %s", name, path)
	return fmt.Sprintf("%s ifindex %d mac %s", name, link.Attrs().Index, link.Attrs().HardwareAddr)
}

func watch(t *testing.T, path string) *netwatch.Watch {
	t.Helper()
	w, err := netwatch.Start(path)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = w.Stop() })
	return w
}

// A forwarder that dies keeps nothing but what VPP and the kernel hold, and its journal. The next
// run adopts what a connection requested again still has, on both sides: VPP creates and deletes
// no interface, the pods' interfaces keep their ifindex and MAC (so the peers' ARP entries stay
// right), and neither pod sees an address, route or rule written. The connection nobody requests
// again is released whole, and a later Close of the adopted one releases everything: the adoption
// filled sdk-vpp's metadata as the chain itself would have.
func TestRestartedForwarderAdoptsBothSides(t *testing.T) {
	eachKernelKind(t, testRestartedForwarderAdoptsBothSides)
}

func testRestartedForwarderAdoptsBothSides(t *testing.T, kind kernelif.Kind, backend vpptest.Backend) {
	var node *vppsimtest.Netns
	if kind == kernelif.Tap {
		node = vppsimtest.NewNetns(t, netnsPrefix)
	}
	vpp := startTestVPP(t, backend, node)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kept, dropped := newRestartPeers(ctx, t), newRestartPeers(ctx, t)
	journalDir := t.TempDir()

	a := startLife(t, vpp, kind, journalDir, node)
	keptRequest := kernelRequest("conn-kept-"+kind.String(), kept.nsc.Path(), "nsc-1", payload.Ethernet)
	// Routes to each other's address, as an icmp-responder's IPAM gives them.
	keptRequest.GetConnection().GetContext().GetIpContext().SrcRoutes = []*networkservice.Route{{Prefix: nseAddress}}
	keptRequest.GetConnection().GetContext().GetIpContext().DstRoutes = []*networkservice.Route{{Prefix: nscAddress}}
	keptConn, err := kept.request(t, a.forwarder, keptRequest.Clone())
	require.NoError(t, err)
	// An ordinary refresh that changes nothing writes nothing on the endpoint's side either:
	// linkroutes finds its marked routes there as they should be.
	refreshWatch := watch(t, kept.nse.Path())
	keptRequest.Connection = keptConn.Clone()
	keptConn, err = kept.request(t, a.forwarder, keptRequest.Clone())
	require.NoError(t, err)
	refreshEvents, err := refreshWatch.Stop()
	require.NoError(t, err)
	require.Empty(t, netwatch.Writes(refreshEvents), "an ordinary refresh wrote in the endpoint's namespace")
	droppedConn, err := dropped.request(t, a.forwarder, kernelRequest("conn-dropped-"+kind.String(), dropped.nsc.Path(), "nsc-1", payload.Ethernet))
	require.NoError(t, err)
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second))
	keptOwner, droppedOwner := keptConn.GetPath().GetPathSegments()[1].GetId(), droppedConn.GetPath().GetPathSegments()[1].GetId()
	clientSide, endpointSide := podLink(t, kept.nsc.Path(), "nsc-1"), podLink(t, kept.nse.Path(), "nse-1")
	a.die()

	b := startLife(t, vpp, kind, journalDir, node)
	owners := []string{keptOwner, droppedOwner}
	sort.Strings(owners)
	require.Equal(t, owners, b.leftovers.Owners())
	since := len(vpp.Requests())
	nscWatch, nseWatch := watch(t, kept.nsc.Path()), watch(t, kept.nse.Path())
	keptRequest.Connection = keptConn.Clone()
	keptConn, err = kept.request(t, b.forwarder, keptRequest)
	require.NoError(t, err, "re-Request through the restarted forwarder")

	require.Empty(t, creations(vpp, since), "VPP interfaces created or deleted for a connection whose interfaces were intact")
	nscEvents, err := nscWatch.Stop()
	require.NoError(t, err)
	require.Empty(t, nscEvents, "the client's namespace saw links, addresses, routes or rules change")
	nseEvents, err := nseWatch.Stop()
	require.NoError(t, err)
	require.Empty(t, nseEvents, "the endpoint's namespace saw links, addresses, routes or rules change")
	require.Equal(t, clientSide, podLink(t, kept.nsc.Path(), "nsc-1"))
	require.Equal(t, endpointSide, podLink(t, kept.nse.Path(), "nse-1"))
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second), "the adopted data path")
	require.Equal(t, []string{droppedOwner}, b.leftovers.Owners(), "only the connection nobody asked for is left")

	require.NoError(t, b.leftovers.ReleaseAll(ctx))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nsc.Path()), "the unclaimed connection's client end outlived its release")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nse.Path()), "the unclaimed connection's endpoint end outlived its release")
	require.Equal(t, clientSide, podLink(t, kept.nsc.Path(), "nsc-1"), "releasing the unclaimed connection touched the adopted one")
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second))

	closeCtx, cancelClose := context.WithTimeout(clienturlctx.WithClientURL(ctx, kept.hopURL), 20*time.Second)
	defer cancelClose()
	_, err = b.forwarder.Close(closeCtx, keptConn)
	require.NoError(t, err)
	vpp.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nsc.Path()))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nse.Path()))
	require.Zero(t, forwarderEnds(t, "conn-kept-"+kind.String()), "veth ends left in the forwarder's namespace")
	records, err := journal.Read(journalDir)
	require.NoError(t, err)
	require.Empty(t, records, "the journal still holds connections that are gone")
}

// A connection that comes back asking for something else on the client's side (here another
// interface name) gets that side rebuilt, the old one released first; the endpoint's side, still
// exactly as recorded, is adopted.
func TestRestartedForwarderRebuildsOnlyTheSideThatDiffers(t *testing.T) {
	c := connectThenDie(t, "conn-renamed")
	vpp, peers, conn, request := c.vpp, c.peers, c.conn, c.request
	endpointSide := podLink(t, peers.nse.Path(), "nse-1")

	b := c.restart(t)
	request.Connection = conn.Clone()
	request.GetConnection().GetMechanism().GetParameters()["name"] = "nsc-2"
	_, err := peers.request(t, b.forwarder, request)
	require.NoError(t, err)
	require.Equal(t, []string{"lo", "nsc-2"}, linkNamesIn(t, peers.nsc.Path()), "the client's old interface was not released, or no new one made")
	require.Equal(t, endpointSide, podLink(t, peers.nse.Path(), "nse-1"), "the endpoint's side was rebuilt although it was intact")
	// This harness's next hop adds no path segment: both sides carry the forwarder's connection ID.
	taps := []string{netnsID(peers.nsc.Path()) + " nsc-2", netnsID(peers.nse.Path()) + " nse-1"}
	sort.Strings(taps)
	require.Equal(t, taps, tapsOf(vpp, conn.GetPath().GetPathSegments()[1].GetId()), "one tap per side, the client's old one released")
	require.NoError(t, vppsimtest.Ping(peers.nsc, nscIP, nseIP, 5*time.Second))
}

// A Request that fails validation after a restart touches nothing of what the previous run left.
func TestMalformedRequestAfterRestartTouchesNothing(t *testing.T) {
	c := connectThenDie(t, "conn-malformed")
	vpp, peers, conn, request := c.vpp, c.peers, c.conn, c.request
	clientSide := podLink(t, peers.nsc.Path(), "nsc-1")

	b := c.restart(t)
	owners := b.leftovers.Owners()
	since := len(vpp.Requests())
	request.Connection = conn.Clone()
	request.GetConnection().GetContext().GetIpContext().SrcIpAddrs = []string{"not-an-address"}
	_, err := peers.request(t, b.forwarder, request)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Empty(t, vpp.Requests()[since:], "VPP was asked something for a Request that failed validation")
	require.Equal(t, owners, b.leftovers.Owners(), "the leftover was claimed for a Request that failed validation")
	require.Equal(t, clientSide, podLink(t, peers.nsc.Path(), "nsc-1"))
	require.NoError(t, vppsimtest.Ping(peers.nsc, nscIP, nseIP, 5*time.Second))
}

// deadRun is a connection over taps that a forwarder built before it died.
type deadRun struct {
	vpp        *testVPP
	node       *vppsimtest.Netns
	peers      *restartPeers
	journalDir string
	request    *networkservice.NetworkServiceRequest
	conn       *networkservice.Connection
}

func connectThenDie(t *testing.T, connID string) *deadRun {
	t.Helper()
	c := &deadRun{node: vppsimtest.NewNetns(t, netnsPrefix), journalDir: t.TempDir()}
	c.vpp = startTestVPP(t, vpptest.Sim, c.node)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.peers = newRestartPeers(ctx, t)
	a := startLife(t, c.vpp, kernelif.Tap, c.journalDir, c.node)
	c.request = kernelRequest(connID, c.peers.nsc.Path(), "nsc-1", payload.Ethernet)
	var err error
	c.conn, err = c.peers.request(t, a.forwarder, c.request.Clone())
	require.NoError(t, err)
	a.die()
	return c
}

func (c *deadRun) restart(t *testing.T) *life {
	t.Helper()
	return startLife(t, c.vpp, kernelif.Tap, c.journalDir, c.node)
}

// tapsOf lists the host names of the simulator's taps tagged with owner.
func tapsOf(vpp *testVPP, owner string) []string {
	var names []string
	for _, iface := range vpp.Sim.State().Interfaces {
		if iface.Tap != nil && iface.Tag == owner {
			names = append(names, netnsID(iface.Tap.HostNamespace)+" "+iface.Tap.HostIfName)
		}
	}
	sort.Strings(names)
	return names
}

// forwarderEnds counts the links in the test process's namespace, the forwarder's, whose alias
// names the veth kind's forwarder end toward a client or an endpoint of the connection firstID.
func forwarderEnds(t *testing.T, firstID string) int {
	t.Helper()
	links, err := netlink.LinkList()
	require.NoError(t, err)
	count := 0
	for _, link := range links {
		switch link.Attrs().Alias {
		case "veth-server-" + firstID, "veth-client-" + firstID:
			count++
		}
	}
	return count
}
