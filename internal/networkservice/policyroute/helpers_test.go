package policyroute

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testNS is a network namespace created for one test and deleted when it ends.
type testNS struct {
	name   string
	url    string
	handle *netlink.Handle
	ns     netns.NsHandle

	removeOnce sync.Once
}

func newTestNS(tb testing.TB) *testNS {
	tb.Helper()
	name := fmt.Sprintf("prt%d-%08x", os.Getpid(), rand.Uint32())

	runtime.LockOSThread()
	origin, err := netns.Get()
	require.NoError(tb, err)
	created, err := netns.NewNamed(name)
	require.NoError(tb, netns.Set(origin))
	runtime.UnlockOSThread()
	_ = origin.Close()
	require.NoError(tb, err)
	n := &testNS{name: name, url: "file:///var/run/netns/" + name, ns: created}
	tb.Cleanup(n.remove)

	n.handle, err = netlink.NewHandleAt(created)
	require.NoError(tb, err)
	lo, err := n.handle.LinkByName("lo")
	require.NoError(tb, err)
	require.NoError(tb, n.handle.LinkSetUp(lo))
	return n
}

// remove deletes the namespace; benchmarks call it per iteration, tests leave it to Cleanup.
func (n *testNS) remove() {
	n.removeOnce.Do(func() {
		if n.handle != nil {
			n.handle.Close()
		}
		_ = n.ns.Close()
		_ = netns.DeleteNamed(n.name)
	})
}

// addLink creates an up veth interface (its peer stays in the namespace too), as the forwarder's kernel
// mechanism would have. This kernel has no dummy driver.
func (n *testNS) addLink(tb testing.TB, name string) int {
	tb.Helper()
	require.NoError(tb, n.handle.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}))
	peer, err := n.handle.LinkByName(name + "p")
	require.NoError(tb, err)
	require.NoError(tb, n.handle.LinkSetUp(peer))
	l, err := n.handle.LinkByName(name)
	require.NoError(tb, err)
	require.NoError(tb, n.handle.LinkSetUp(l))
	return l.Attrs().Index
}

func (n *testNS) delLink(tb testing.TB, name string) {
	tb.Helper()
	l, err := n.handle.LinkByName(name)
	require.NoError(tb, err)
	require.NoError(tb, n.handle.LinkDel(l))
}

func newRequest(n *testNS, connID, ifName string, policies ...*networkservice.PolicyRoute) *networkservice.NetworkServiceRequest {
	mechanism := kernel.New(n.url)
	kernel.ToMechanism(mechanism).SetInterfaceName(ifName)
	return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id:        connID,
		Mechanism: mechanism,
		Context:   &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{Policies: policies}},
	}}
}

func newChain(opts ...Option) networkservice.NetworkServiceServer {
	return next.NewNetworkServiceServer(NewServer(opts...))
}

func request(tb testing.TB, server networkservice.NetworkServiceServer, req *networkservice.NetworkServiceRequest) *networkservice.Connection {
	tb.Helper()
	conn, err := server.Request(quietContext(), req)
	require.NoError(tb, err)
	return conn
}

// snapshot renders every marked rule and every route of the table range, with link names instead of indexes,
// so states before and after a link was recreated can be compared.
func (n *testNS) snapshot(tb testing.TB, o *options) []string {
	tb.Helper()
	rules, err := n.handle.RuleList(netlink.FAMILY_ALL)
	require.NoError(tb, err)
	var out []string
	for i := range rules {
		if rules[i].Protocol == o.protocol || o.inRange(uint32(rules[i].Table)) {
			out = append(out, ruleString(&rules[i]))
		}
	}
	routes, err := n.handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{}, netlink.RT_FILTER_TABLE)
	require.NoError(tb, err)
	for i := range routes {
		if !o.inRange(uint32(routes[i].Table)) && routes[i].Protocol != netlink.RouteProtocol(o.protocol) {
			continue
		}
		r := &routes[i]
		linkName := "?"
		if l, err := n.handle.LinkByIndex(r.LinkIndex); err == nil {
			linkName = l.Attrs().Name
		}
		out = append(out, fmt.Sprintf("route table %d %v via %v dev %s metric %d proto %d", r.Table, r.Dst, r.Gw, linkName, r.Priority, r.Protocol))
	}
	sort.Strings(out)
	return out
}

// ruleString renders a rule as listed by the netlink library, with what a policy rule can hold and whether
// it holds anything else.
func ruleString(r *netlink.Rule) string {
	other := r.Dst != nil || r.Mark != 0 || r.Mask != nil || r.Tos != 0 || r.TunID != 0 || r.Goto >= 0 ||
		r.IifName != "" || r.OifName != "" || r.SuppressIfgroup >= 0 || r.SuppressPrefixlen >= 0 || r.Invert ||
		r.UIDRange != nil || r.Flow >= 0
	return fmt.Sprintf("rule family %d from %v ipproto %d sport %v dport %v priority %d table %d proto %d other %v",
		r.Family, r.Src, r.IPProto, r.Sport, r.Dport, r.Priority, r.Table, r.Protocol, other)
}

// monitor counts rule and route writes into the table range as rtnetlink reports them; without options, into
// every table but the local one.
type monitor struct {
	socket *nl.NetlinkSocket
	n      *testNS
	o      *options
	mu     sync.Mutex
	events []string
	marks  chan struct{}
}

// sentinelTable receives a route after each measured step: once the monitor sees it, every earlier
// notification has been read.
const sentinelTable = 77

func newMonitor(tb testing.TB, n *testNS, o *options) *monitor {
	tb.Helper()
	socket, err := nl.SubscribeAt(n.ns, netns.None(), unix.NETLINK_ROUTE,
		unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE)
	require.NoError(tb, err)
	require.NoError(tb, socket.SetReceiveBufferSize(8<<20, true))
	m := &monitor{socket: socket, n: n, o: o, marks: make(chan struct{}, 16)}
	done := make(chan struct{})
	go m.run(done)
	tb.Cleanup(func() {
		socket.Close()
		<-done
	})
	return m
}

func (m *monitor) run(done chan struct{}) {
	defer close(done)
	for {
		msgs, _, err := m.socket.Receive()
		if err != nil {
			if err == unix.ENOBUFS {
				m.record("overrun")
				continue
			}
			return
		}
		for i := range msgs {
			m.handle(&msgs[i])
		}
	}
}

func (m *monitor) handle(msg *syscall.NetlinkMessage) {
	switch msg.Header.Type {
	case unix.RTM_NEWRULE, unix.RTM_DELRULE, unix.RTM_NEWROUTE, unix.RTM_DELROUTE:
	default:
		return
	}
	rtmsg := nl.DeserializeRtMsg(msg.Data)
	table := uint32(rtmsg.Table)
	attrs, err := nl.ParseRouteAttr(msg.Data[rtmsg.Len():])
	if err != nil {
		return
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.RTA_TABLE {
			table = nl.NativeEndian().Uint32(a.Value)
		}
	}
	if table == sentinelTable {
		m.marks <- struct{}{}
		return
	}
	if m.o == nil && table != unix.RT_TABLE_LOCAL || m.o != nil && m.o.inRange(table) {
		m.record(fmt.Sprintf("%s table %d", messageName(msg.Header.Type), table))
	}
}

func messageName(t uint16) string {
	return map[uint16]string{unix.RTM_NEWRULE: "newrule", unix.RTM_DELRULE: "delrule",
		unix.RTM_NEWROUTE: "newroute", unix.RTM_DELROUTE: "delroute"}[t]
}

func (m *monitor) record(event string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, event)
}

// take waits until every notification up to now has been read and returns them, starting a new count.
func (m *monitor) take(tb testing.TB) []string {
	tb.Helper()
	lo, err := m.n.handle.LinkByName("lo")
	require.NoError(tb, err)
	sentinel := &netlink.Route{LinkIndex: lo.Attrs().Index, Table: sentinelTable, Dst: mustIPNet("192.0.2.77/32")}
	require.NoError(tb, m.n.handle.RouteReplace(sentinel))
	require.NoError(tb, m.n.handle.RouteDel(sentinel))
	for range 2 {
		select {
		case <-m.marks:
		case <-time.After(10 * time.Second):
			tb.Fatal("rtnetlink monitor did not see the sentinel route")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	events := m.events
	m.events = nil
	return events
}

func countEvents(events []string, kind string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, kind+" ") {
			n++
		}
	}
	return n
}

func mustIPNet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}
