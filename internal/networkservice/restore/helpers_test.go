package restore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.fd.io/govpp/api"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/adapters"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// clientNetns is a client pod's namespace holding kernel interfaces for connections.
type clientNetns struct {
	name    string
	ns      netns.NsHandle
	handle  *netlink.Handle
	fileURL string
	// inodeURL is how a client names its namespace over the unix socket, the descriptor beside it.
	inodeURL string
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
}

// clientNetnsPrefix starts the client namespaces of these tests: jrn-<pid>-<random>.
const clientNetnsPrefix = "jrn"

// sweepDeadRuns deletes, once per process, the client namespaces of killed earlier runs.
var sweepDeadRuns sync.Once

func newClientNetns(t *testing.T, interfaces ...string) *clientNetns {
	t.Helper()
	requireRoot(t)
	sweepDeadRuns.Do(func() { require.NoError(t, topology.SweepStale(clientNetnsPrefix)) })
	name := fmt.Sprintf("%s%08x", topology.RunPrefix(clientNetnsPrefix), rand.Uint32())
	runtime.LockOSThread()
	origin, err := netns.Get()
	require.NoError(t, err)
	created, err := netns.NewNamed(name)
	require.NoError(t, netns.Set(origin))
	runtime.UnlockOSThread()
	_ = origin.Close()
	require.NoError(t, err)
	t.Cleanup(func() { _ = created.Close(); _ = netns.DeleteNamed(name) })

	handle, err := netlink.NewHandleAt(created)
	require.NoError(t, err)
	t.Cleanup(handle.Close)
	c := &clientNetns{name: name, ns: created, handle: handle, fileURL: "file:///var/run/netns/" + name}
	for _, ifName := range append([]string{"lo"}, interfaces...) {
		if ifName != "lo" {
			c.addInterface(t, ifName)
		}
		link, err := handle.LinkByName(ifName)
		require.NoError(t, err)
		require.NoError(t, handle.LinkSetUp(link))
	}
	var stat syscall.Stat_t
	require.NoError(t, syscall.Stat("/var/run/netns/"+name, &stat))
	c.inodeURL = fmt.Sprintf("inode://%d/%d", stat.Dev, stat.Ino)
	return c
}

func (c *clientNetns) addInterface(t *testing.T, ifName string) {
	t.Helper()
	require.NoError(t, c.handle.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifName}, PeerName: ifName + "p"}))
	for _, name := range []string{ifName, ifName + "p"} {
		link, err := c.handle.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, c.handle.LinkSetUp(link))
	}
}

// connection is a kernel connection into c through ifName with one policy and one route; its
// mechanism names the namespace by inode, as a client does.
func (c *clientNetns) connection(id, ifName string, subnet int) *networkservice.Connection {
	mechanism := kernel.New(c.inodeURL)
	kernel.ToMechanism(mechanism).SetInterfaceName(ifName)
	return &networkservice.Connection{
		Id:        id,
		Mechanism: mechanism,
		Path: &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{
			{Id: "nsc-" + id, Token: "token-of-this-run"}, {Id: id, Token: "token-of-this-run"},
		}},
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: []string{fmt.Sprintf("172.16.%d.2/32", subnet)},
			DstIpAddrs: []string{fmt.Sprintf("172.16.%d.1/32", subnet)},
			SrcRoutes:  []*networkservice.Route{{Prefix: fmt.Sprintf("192.168.%d.0/24", subnet), NextHop: fmt.Sprintf("172.16.%d.1", subnet)}},
			Policies: []*networkservice.PolicyRoute{{
				From:   fmt.Sprintf("172.16.%d.0/24", subnet),
				Routes: []*networkservice.Route{{Prefix: fmt.Sprintf("10.%d.0.0/16", subnet), NextHop: fmt.Sprintf("172.16.%d.1", subnet)}},
			}},
		}},
	}
}

// marked renders every rule and route carrying the forwarder's mark in c.
func (c *clientNetns) marked(t *testing.T) []string {
	t.Helper()
	rules, err := c.handle.RuleList(netlink.FAMILY_ALL)
	require.NoError(t, err)
	var out []string
	for _, rule := range rules {
		if rule.Protocol == routeview.ForwarderProtocol {
			out = append(out, fmt.Sprintf("rule from %v table %d priority %d", rule.Src, rule.Table, rule.Priority))
		}
	}
	routes, err := c.handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	for _, route := range routes {
		if route.Protocol == routeview.ForwarderProtocol {
			out = append(out, fmt.Sprintf("route %v via %v dev %d table %d", route.Dst, route.Gw, route.LinkIndex, route.Table))
		}
	}
	sort.Strings(out)
	return out
}

// receivesFDs stands in for sdk's recvfd: the chain behind it opens the namespace by a file URL,
// and the connection goes back up with the inode URL it came with.
type receivesFDs struct {
	fileURL string
}

func (r *receivesFDs) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	var inodeURL string
	for _, m := range append(request.GetMechanismPreferences(), request.GetConnection().GetMechanism()) {
		if mechanism := kernel.ToMechanism(m); mechanism != nil {
			inodeURL = mechanism.GetNetNSURL()
			mechanism.SetNetNSURL(r.fileURL)
		}
	}
	conn, err := next.Server(ctx).Request(ctx, request)
	if mechanism := kernel.ToMechanism(conn.GetMechanism()); mechanism != nil {
		mechanism.SetNetNSURL(inodeURL)
	}
	return conn, err
}

func (r *receivesFDs) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	inodeURL := mechanism.GetNetNSURL()
	mechanism.SetNetNSURL(r.fileURL)
	defer mechanism.SetNetNSURL(inodeURL)
	return next.Server(ctx).Close(ctx, conn)
}

// selectsMechanism stands for the mechanism element: a client's first Request names its
// mechanism among its preferences only.
type selectsMechanism struct{}

func (selectsMechanism) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if request.GetConnection().GetMechanism() == nil && len(request.GetMechanismPreferences()) > 0 {
		request.GetConnection().Mechanism = request.GetMechanismPreferences()[0]
	}
	return next.Server(ctx).Request(ctx, request)
}

func (selectsMechanism) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// answersWithContext stands for the next hop: it answers a Request that carries no IP context yet
// (a client's first) with the one the endpoint gives, as nsmgr and the endpoint do.
type answersWithContext struct {
	context *networkservice.ConnectionContext
}

func (a *answersWithContext) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if request.GetConnection().GetContext().GetIpContext() == nil && a.context != nil {
		request.GetConnection().Context = a.context
	}
	return next.Server(ctx).Request(ctx, request)
}

func (a *answersWithContext) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// testVPP is a VPP simulator the forwarder runs talk to.
func testVPP(t *testing.T) api.Connection {
	t.Helper()
	requireRoot(t)
	sim := vppsimtest.StartSim(t, "")
	return vppsimtest.Dial(t, sim)
}

// forwarderNetns is a namespace standing for the forwarder's own, where veth ends are.
func forwarderNetns(t *testing.T) *netlink.Handle {
	t.Helper()
	requireRoot(t)
	ns, err := netns.GetFromName(vppsimtest.NewNetns(t, "rst").Name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ns.Close() })
	handle, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	t.Cleanup(handle.Close)
	return handle
}

// forwarderRun is one life of the forwarder: its journal and the kernel part of its chain behind
// the journal and restore elements, holding what previous lives left.
type forwarderRun struct {
	journal   *journal.Journal
	leftovers *Leftovers
	releaser  *Releaser
	chain     networkservice.NetworkServiceServer
	cancel    context.CancelFunc
}

// startForwarderRun opens the journal in journalDir (the previous run must be dead: the journal is
// locked) and builds the chain; tail elements go behind the kernel elements.
func startForwarderRun(t *testing.T, client *clientNetns, journalDir string, vppConn api.Connection, fwdNetns *netlink.Handle, tail ...networkservice.NetworkServiceServer) *forwarderRun {
	t.Helper()
	return startForwarderRunWithCrashPoint(t, client, journalDir, vppConn, fwdNetns, nil, tail...)
}

// startForwarderRunWithCrashPoint puts crashPoint right behind the journal element: on the way
// back it runs after everything was programmed and before the journal commits.
func startForwarderRunWithCrashPoint(t *testing.T, client *clientNetns, journalDir string, vppConn api.Connection, fwdNetns *netlink.Handle,
	crashPoint networkservice.NetworkServiceServer, tail ...networkservice.NetworkServiceServer) *forwarderRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	j, err := journal.Open(ctx, journalDir)
	require.NoError(t, err)
	releaser := NewReleaser(vppConn, markedroutes.NewServer(), WithForwarderNetns(fwdNetns))
	leftovers, err := Scan(ctx, releaser, j, true)
	require.NoError(t, err)
	run := &forwarderRun{journal: j, leftovers: leftovers, releaser: releaser, cancel: cancel}
	elements := []networkservice.NetworkServiceServer{
		metadata.NewServer(),
		&receivesFDs{fileURL: client.fileURL},
		journal.NewServer(ctx, j, releaser.Release),
	}
	if crashPoint != nil {
		elements = append(elements, crashPoint)
	}
	elements = append(append(elements,
		NewServer(leftovers),
		selectsMechanism{},
		markedroutes.NewServer(),
		adapters.NewClientToServer(journal.NewClient(j)),
	), tail...)
	run.chain = next.NewNetworkServiceServer(elements...)
	t.Cleanup(run.die)
	return run
}

// die ends the run as a SIGKILL does: nothing is closed, the journal's lock goes.
func (f *forwarderRun) die() {
	f.cancel()
	_ = f.journal.Close()
}

func (f *forwarderRun) request(t *testing.T, conn *networkservice.Connection) *networkservice.Connection {
	t.Helper()
	got, err := f.chain.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: conn})
	require.NoError(t, err)
	return got
}

// firstRequest is a client's first Request for conn: its kernel interface named among the
// mechanism preferences only, and no IP context yet (the endpoint decides it).
func firstRequest(conn *networkservice.Connection) *networkservice.NetworkServiceRequest {
	request := &networkservice.NetworkServiceRequest{Connection: conn.Clone(), MechanismPreferences: []*networkservice.Mechanism{conn.GetMechanism().Clone()}}
	request.Connection.Mechanism = nil
	request.Connection.Context = nil
	return request
}

// previousLife leaves two live connections in client, as a forwarder that was then killed does.
// It returns what the kernel held with conn-b alone and with both.
func previousLife(t *testing.T, client *clientNetns, journalDir string, vppConn api.Connection, fwdNetns *netlink.Handle) (onlyB, both []string) {
	t.Helper()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, client.connection("conn-b", "nsm-b", 2))
	onlyB = client.marked(t)
	first.request(t, client.connection("conn-a", "nsm-a", 1))
	both = client.marked(t)
	require.Len(t, onlyB, 4, "conn-b's rule, policy route and interface routes: %v", onlyB)
	require.Len(t, both, 8, "and conn-a's: %v", both)
	first.die()
	return onlyB, both
}

func recordIDs(t *testing.T, dir string) []string {
	t.Helper()
	records, err := journal.Read(dir)
	require.NoError(t, err)
	var ids []string
	for _, rec := range records {
		ids = append(ids, rec.ID)
	}
	return ids
}
