package xconnect_test

import (
	"context"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/restore"
	"github.com/nsmfwd/forwarder-vpp/internal/xconnect"
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

// tapsOf lists the namespaces (netnsID) and host names of the simulator's taps tagged with owner.
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

// A forwarder that dies keeps nothing but what VPP and the kernel hold. The next run scans that,
// rebuilds the connections requested again on a clean slate, and releases the others.
func TestRestartedForwarderRebuildsRequestedConnectionsAndReleasesTheRest(t *testing.T) {
	// Registered first, so it runs last: a dead forwarder's own cleanup must find nothing to do.
	ctxA, cancelA := context.WithCancel(context.Background())
	t.Cleanup(cancelA)
	node := vppsimtest.NewNetns(t, netnsPrefix)
	vpp := startTestVPP(t, vpptest.Sim, node)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kept, dropped := newRestartPeers(ctx, t), newRestartPeers(ctx, t)

	// Run A: both connections up, the first one carrying traffic.
	vppConnA := vpp.Dial(t)
	forwarderA := serveForwarder(t, newForwarder(ctxA, t, vpp, vppConnA, kernelif.Tap))
	keptRequest := kernelRequest("conn-kept", kept.nsc.Path(), "nsc-1", payload.IP)
	keptConn, err := kept.request(t, forwarderA, keptRequest.Clone())
	require.NoError(t, err)
	droppedConn, err := dropped.request(t, forwarderA, kernelRequest("conn-dropped", dropped.nsc.Path(), "nsc-1", payload.IP))
	require.NoError(t, err)
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second))
	keptOwner := keptConn.GetPath().GetPathSegments()[1].GetId()
	droppedOwner := droppedConn.GetPath().GetPathSegments()[1].GetId()
	keptTaps := []string{netnsID(kept.nsc.Path()) + " nsc-1", netnsID(kept.nse.Path()) + " nse-1"}
	sort.Strings(keptTaps)
	require.Equal(t, keptTaps, tapsOf(vpp, keptOwner))

	// A dies: its VPP connection goes, no Close is ever sent, VPP keeps what A made.
	vppConnA.Disconnect()

	// Run B starts from what VPP holds. The scan reads the forwarder's namespace for veth ends
	// too; the node namespace stands for it, so that veths other tests leave in the test
	// process's namespace are never taken for leftovers (tap kind leaves none anywhere).
	vppConnB := vpp.Dial(t)
	var leftovers *restore.Leftovers
	node.MustDo(t, func() error {
		leftovers, err = restore.Scan(ctx, vppConnB)
		return err
	})
	owners := []string{keptOwner, droppedOwner}
	sort.Strings(owners)
	require.Equal(t, owners, leftovers.Owners(), "the scan must find both connections by their VPP tags")
	forwarderB := serveForwarder(t, newForwarder(ctx, t, vpp, vppConnB, kernelif.Tap, xconnect.WithLeftovers(leftovers)))

	// nsmgr heals the first connection through B with the connection A returned.
	keptRequest.Connection = keptConn.Clone()
	keptConn, err = kept.request(t, forwarderB, keptRequest)
	require.NoError(t, err, "re-Request through the restarted forwarder")
	require.Equal(t, keptOwner, keptConn.GetPath().GetPathSegments()[1].GetId())
	require.Equal(t, keptTaps, tapsOf(vpp, keptOwner), "exactly one tap per side, the old ones released")
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second), "the rebuilt data path")
	require.Equal(t, []string{droppedOwner}, leftovers.Owners(), "only the connection nobody asked for is left")
	require.Len(t, tapsOf(vpp, droppedOwner), 2, "leftovers are released when claimed or expired, not before")

	// The second connection is never requested again: its grace period ends.
	leftovers.ReleaseAll(ctx)

	require.Empty(t, leftovers.Owners())
	require.Empty(t, tapsOf(vpp, droppedOwner), "the unclaimed connection's VPP interfaces outlived its release")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nsc.Path()), "the unclaimed connection's client end outlived its release")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nse.Path()), "the unclaimed connection's endpoint end outlived its release")
	require.Equal(t, keptTaps, tapsOf(vpp, keptOwner), "releasing the unclaimed connection touched the healed one")
	require.NoError(t, vppsimtest.Ping(kept.nsc, nscIP, nseIP, 5*time.Second))

	closeCtx, cancelClose := context.WithTimeout(clienturlctx.WithClientURL(ctx, kept.hopURL), 20*time.Second)
	defer cancelClose()
	_, err = forwarderB.Close(closeCtx, keptConn)
	require.NoError(t, err)
	vpp.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nsc.Path()))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nse.Path()))
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

// afPacketsOf counts VPP's af_packet interfaces tagged with owner.
func afPacketsOf(t *testing.T, vpp *testVPP, owner string) int {
	t.Helper()
	hosts := vpp.AfPacketHosts(t)
	count := 0
	for _, iface := range vpp.Interfaces(t) {
		if _, afPacket := hosts[iface.SwIfIndex]; afPacket && iface.Tag == owner {
			count++
		}
	}
	return count
}

// The veth kind leaves a previous run's objects in two places: af_packet interfaces in VPP and
// veth pairs whose forwarder ends sit in the forwarder's namespace. A restarted forwarder replaces
// both for a connection requested again. The scan runs in the test process's namespace, which
// other tests share, so only named connections are released here, never everything unclaimed.
func TestRestartedForwarderRebuildsAVethConnection(t *testing.T) {
	vpptest.Each(t, testRestartedForwarderRebuildsAVethConnection)
}

func testRestartedForwarderRebuildsAVethConnection(t *testing.T, backend vpptest.Backend) {
	ctxA, cancelA := context.WithCancel(context.Background())
	t.Cleanup(cancelA)
	vpp := startTestVPP(t, backend, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kept, dropped := newRestartPeers(ctx, t), newRestartPeers(ctx, t)

	vppConnA := vpp.Dial(t)
	forwarderA := serveForwarder(t, newForwarder(ctxA, t, vpp, vppConnA, kernelif.Veth))
	keptRequest := kernelRequest("conn-kept-veth", kept.nsc.Path(), "nsc-1", payload.IP)
	keptConn, err := kept.request(t, forwarderA, keptRequest.Clone())
	require.NoError(t, err)
	droppedConn, err := dropped.request(t, forwarderA, kernelRequest("conn-dropped-veth", dropped.nsc.Path(), "nsc-1", payload.IP))
	require.NoError(t, err)
	keptOwner := keptConn.GetPath().GetPathSegments()[1].GetId()
	droppedIDs := []string{droppedConn.GetPath().GetPathSegments()[0].GetId(), droppedConn.GetPath().GetPathSegments()[1].GetId()}
	require.Equal(t, 2, afPacketsOf(t, vpp, keptOwner))
	require.Equal(t, 2, forwarderEnds(t, "conn-kept-veth"))

	vppConnA.Disconnect()

	vppConnB := vpp.Dial(t)
	leftovers, err := restore.Scan(ctx, vppConnB)
	require.NoError(t, err)
	owners := leftovers.Owners()
	for _, id := range []string{"conn-kept-veth", keptOwner, droppedIDs[0], droppedIDs[1]} {
		require.Contains(t, owners, id, "the scan must find every connection by VPP tag and veth alias")
	}
	forwarderB := serveForwarder(t, newForwarder(ctx, t, vpp, vppConnB, kernelif.Veth, xconnect.WithLeftovers(leftovers)))

	keptRequest.Connection = keptConn.Clone()
	keptConn, err = kept.request(t, forwarderB, keptRequest)
	require.NoError(t, err, "re-Request through the restarted forwarder")
	require.Equal(t, 2, afPacketsOf(t, vpp, keptOwner), "exactly one af_packet per side, the old ones released")
	require.Equal(t, 2, forwarderEnds(t, "conn-kept-veth"), "exactly one veth pair per side, the old ones released")
	require.Equal(t, []string{"lo", "nsc-1"}, linkNamesIn(t, kept.nsc.Path()))
	require.Equal(t, []string{"lo", "nse-1"}, linkNamesIn(t, kept.nse.Path()))

	leftovers.ReleaseOwned(ctx, droppedIDs...)

	require.Zero(t, afPacketsOf(t, vpp, droppedIDs[1]), "the unclaimed connection's VPP interfaces outlived its release")
	require.Zero(t, forwarderEnds(t, "conn-dropped-veth"), "the unclaimed connection's veth pairs outlived their release")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nsc.Path()))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, dropped.nse.Path()))

	closeCtx, cancelClose := context.WithTimeout(clienturlctx.WithClientURL(ctx, kept.hopURL), 20*time.Second)
	defer cancelClose()
	_, err = forwarderB.Close(closeCtx, keptConn)
	require.NoError(t, err)
	vpp.requireOnlyUplink(t)
	require.Zero(t, forwarderEnds(t, "conn-kept-veth"))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nsc.Path()))
	require.Equal(t, []string{"lo"}, linkNamesIn(t, kept.nse.Path()))
}
