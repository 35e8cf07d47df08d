package restore

import (
	"context"
	"fmt"
	"github.com/nsmfwd/forwarder-vpp/internal/markedroutes"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/kernelmark"
)

// clientNetns is a client pod's namespace holding the kernel interfaces of two connections.
type clientNetns struct {
	name    string
	ns      netns.NsHandle
	handle  *netlink.Handle
	fileURL string
	// inodeURL is how a client names its namespace over the unix socket, the descriptor beside it.
	inodeURL string
}

func newClientNetns(t *testing.T, interfaces ...string) *clientNetns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	name := fmt.Sprintf("jrn-%d-%08x", os.Getpid(), rand.Uint32())
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
			require.NoError(t, handle.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifName}, PeerName: ifName + "p"}))
			peer, err := handle.LinkByName(ifName + "p")
			require.NoError(t, err)
			require.NoError(t, handle.LinkSetUp(peer))
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
		if rule.Protocol == kernelmark.Protocol {
			out = append(out, fmt.Sprintf("rule from %v table %d priority %d", rule.Src, rule.Table, rule.Priority))
		}
	}
	routes, err := c.handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	for _, route := range routes {
		if route.Protocol == kernelmark.Protocol {
			out = append(out, fmt.Sprintf("route %v via %v dev %d table %d", route.Dst, route.Gw, route.LinkIndex, route.Table))
		}
	}
	sort.Strings(out)
	return out
}

// receivesFDs stands in for sdk's recvfd: the chain behind it opens the namespace by a file URL,
// and the connection goes back up with the inode URL it came with.
type receivesFDs struct {
	networkservice.NetworkServiceServer
	fileURL string
}

func (r *receivesFDs) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	mechanism := kernel.ToMechanism(request.GetConnection().GetMechanism())
	inodeURL := mechanism.GetNetNSURL()
	mechanism.SetNetNSURL(r.fileURL)
	conn, err := next.Server(ctx).Request(ctx, request)
	mechanism.SetNetNSURL(inodeURL)
	if conn != nil {
		kernel.ToMechanism(conn.GetMechanism()).SetNetNSURL(inodeURL)
	}
	return conn, err
}

func (r *receivesFDs) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// forwarderRun is one life of the forwarder: its journal and its chain's kernel part, behind the
// restore element holding what the previous life left.
type forwarderRun struct {
	journal   *journal.Journal
	leftovers *Leftovers
	chain     networkservice.NetworkServiceServer
}

func startForwarderRun(t *testing.T, client *clientNetns, journalDir string) *forwarderRun {
	t.Helper()
	j, err := journal.Open(context.Background(), journalDir)
	require.NoError(t, err)
	leftovers := newLeftovers(scanJournal(j, markedroutes.NewServer()))
	return &forwarderRun{
		journal:   j,
		leftovers: leftovers,
		chain: next.NewNetworkServiceServer(
			NewServer(leftovers),
			journal.NewServer(j),
			&receivesFDs{fileURL: client.fileURL},
			markedroutes.NewServer(),
		),
	}
}

func (f *forwarderRun) request(t *testing.T, conn *networkservice.Connection) {
	t.Helper()
	_, err := f.chain.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: conn})
	require.NoError(t, err)
}

// previousLife leaves two live connections in client, as a forwarder that was then killed does.
// It returns what the kernel held with conn-b alone and with both.
func previousLife(t *testing.T, client *clientNetns, journalDir string) (onlyB, both []string) {
	t.Helper()
	first := startForwarderRun(t, client, journalDir)
	first.request(t, client.connection("conn-b", "nsm-b", 2))
	onlyB = client.marked(t)
	first.request(t, client.connection("conn-a", "nsm-a", 1))
	both = client.marked(t)
	require.Len(t, onlyB, 4, "conn-b's rule, policy route and interface routes: %v", onlyB)
	require.Len(t, both, 8, "and conn-a's: %v", both)
	return onlyB, both
}

// journalFile finds the record of the connection id in dir: nil when there is none.
func journalFile(t *testing.T, dir string, id string) os.FileInfo {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		recorded := &networkservice.Connection{}
		require.NoError(t, protojson.Unmarshal(data, recorded))
		if recorded.GetId() == id {
			info, err := os.Stat(file)
			require.NoError(t, err)
			return info
		}
	}
	return nil
}

// A connection requested again after a restart finds its rules and routes intact: the chain
// adopts them, nothing is deleted or rewritten, and its journal record stays as it was.
func TestRestartWithIntactKernelStateWritesNothing(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	journalDir := t.TempDir()
	_, both := previousLife(t, client, journalDir)
	recordA := journalFile(t, journalDir, "conn-a")
	require.NotNil(t, recordA)

	second := startForwarderRun(t, client, journalDir)
	require.Equal(t, []string{"conn-a", "conn-b"}, second.leftovers.Owners())
	writes := watchWrites(t, client)
	second.request(t, client.connection("conn-a", "nsm-a", 1))
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	require.Empty(t, writes.settle(t), "rules or routes written although the kernel state was intact")
	require.Empty(t, second.leftovers.Owners(), "the journal leftovers were not dropped by the Requests")

	second.leftovers.ReleaseAll(context.Background())
	require.Equal(t, both, client.marked(t), "the expiry pass removed state of connections that came back")
	require.True(t, os.SameFile(recordA, journalFile(t, journalDir, "conn-a")), "the journal record was rewritten")
}

// A connection that died while the forwarder was down is cleaned up once it is not requested
// within the grace period: its rules and routes go, those of a live connection in the same
// namespace stay, and its journal record is removed.
func TestUnclaimedJournalConnectionIsClosedAfterTheGracePeriod(t *testing.T) {
	for _, interfaceGone := range []bool{false, true} {
		t.Run(fmt.Sprintf("interface gone %v", interfaceGone), func(t *testing.T) {
			client := newClientNetns(t, "nsm-a", "nsm-b")
			journalDir := t.TempDir()
			onlyB, _ := previousLife(t, client, journalDir)
			if interfaceGone {
				// As when VPP leftovers (the tap, the veth) were released first.
				link, err := client.handle.LinkByName("nsm-a")
				require.NoError(t, err)
				require.NoError(t, client.handle.LinkDel(link))
			}

			second := startForwarderRun(t, client, journalDir)
			second.request(t, client.connection("conn-b", "nsm-b", 2))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			second.leftovers.ExpireAfter(ctx, 50*time.Millisecond)
			require.Eventually(t, func() bool { return journalFile(t, journalDir, "conn-a") == nil }, 5*time.Second, 20*time.Millisecond,
				"conn-a's journal record outlived the grace period")
			require.Equal(t, onlyB, client.marked(t))
			require.NotNil(t, journalFile(t, journalDir, "conn-b"))
			require.Equal(t, []string{"conn-b"}, idsOf(second.journal.Connections()))
		})
	}
}

// Closing a connection that still has a journal leftover removes its kernel state too.
func TestCloseReleasesTheJournalLeftover(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	journalDir := t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir)
	second := startForwarderRun(t, client, journalDir)
	// The tail of this chain never saw conn-a, so only the leftover can remove its state.
	closing := next.NewNetworkServiceServer(NewServer(second.leftovers), journal.NewServer(second.journal))
	_, err := closing.Close(context.Background(), client.connection("conn-a", "nsm-a", 1))
	require.NoError(t, err)
	require.Equal(t, onlyB, client.marked(t))
	require.Nil(t, journalFile(t, journalDir, "conn-a"))
}

func idsOf(conns []*networkservice.Connection) []string {
	var ids []string
	for _, conn := range conns {
		ids = append(ids, conn.GetId())
	}
	return ids
}

// writeWatch records rule and route writes in a namespace as rtnetlink reports them.
type writeWatch struct {
	socket       *nl.NetlinkSocket
	client       *clientNetns
	mu           sync.Mutex
	writes       []string
	sentinelSeen chan struct{}
}

// sentinelTable receives one route once the measured steps are done: when the watch sees it, it
// has read every notification before it.
const sentinelTable = 77

func watchWrites(t *testing.T, client *clientNetns) *writeWatch {
	t.Helper()
	socket, err := nl.SubscribeAt(client.ns, netns.None(), unix.NETLINK_ROUTE,
		unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE)
	require.NoError(t, err)
	w := &writeWatch{socket: socket, client: client, sentinelSeen: make(chan struct{})}
	done := make(chan struct{})
	go w.run(done)
	t.Cleanup(func() { socket.Close(); <-done })
	return w
}

func (w *writeWatch) run(done chan struct{}) {
	defer close(done)
	for {
		msgs, _, err := w.socket.Receive()
		if err != nil {
			return
		}
		for _, msg := range msgs {
			if msg.Header.Type != unix.RTM_NEWROUTE && msg.Header.Type != unix.RTM_DELROUTE &&
				msg.Header.Type != unix.RTM_NEWRULE && msg.Header.Type != unix.RTM_DELRULE {
				continue
			}
			rtmsg := nl.DeserializeRtMsg(msg.Data)
			if msg.Header.Type == unix.RTM_NEWROUTE && rtmsg.Table == sentinelTable {
				close(w.sentinelSeen)
				continue
			}
			w.mu.Lock()
			w.writes = append(w.writes, fmt.Sprintf("type %d table %d", msg.Header.Type, rtmsg.Table))
			w.mu.Unlock()
		}
	}
}

// settle writes the sentinel and returns every write seen before it.
func (w *writeWatch) settle(t *testing.T) []string {
	t.Helper()
	lo, err := w.client.handle.LinkByName("lo")
	require.NoError(t, err)
	_, dst, _ := net.ParseCIDR("203.0.113.0/24")
	require.NoError(t, w.client.handle.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: dst, Table: sentinelTable}))
	select {
	case <-w.sentinelSeen:
	case <-time.After(5 * time.Second):
		t.Fatal("the rtnetlink watch did not see the sentinel route")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// A connection whose namespace is gone (its pod was deleted) took its kernel state with it: the
// release only forgets it, under either form of recorded URL.
func TestJournalLeftoverOfAVanishedNamespaceIsForgotten(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	journalDir := t.TempDir()
	j, err := journal.Open(context.Background(), journalDir)
	require.NoError(t, err)
	byInode := client.connection("conn-inode", "nsm-a", 1)
	byFile := client.connection("conn-file", "nsm-a", 2)
	kernel.ToMechanism(byFile.GetMechanism()).SetNetNSURL(client.fileURL)
	require.NoError(t, j.Record(byInode))
	require.NoError(t, j.Record(byFile))
	_ = client.ns.Close()
	require.NoError(t, netns.DeleteNamed(client.name))

	for _, url := range []string{client.inodeURL, client.fileURL} {
		_, found, err := resolveNetNS(url)
		require.NoError(t, err)
		require.False(t, found, "%s still resolves after its namespace was deleted", url)
	}
	reopened, err := journal.Open(context.Background(), journalDir)
	require.NoError(t, err)
	newLeftovers(scanJournal(reopened, markedroutes.NewServer())).ReleaseAll(context.Background())
	require.Empty(t, reopened.Connections())
}

func TestRecordedNetNSURLMustBeFileOrInode(t *testing.T) {
	for _, url := range []string{"", "inode://4/not-a-number", "tcp://1.2.3.4"} {
		_, _, err := resolveNetNS(url)
		require.Error(t, err, url)
	}
}
