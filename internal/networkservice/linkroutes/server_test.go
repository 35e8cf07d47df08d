package linkroutes_test

import (
	"context"
	"fmt"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/checks/checkrequest"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/linkroutes"
)

const ifName = "nsm-test"

// clientNamespace is a client pod's namespace with the connection's interface in it.
type clientNamespace struct {
	name   string
	handle *netlink.Handle
	ns     netns.NsHandle
	link   netlink.Link
}

func newClientNamespace(t *testing.T) *clientNamespace {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	name := vppsimtest.NewNetns(t, "lrt").Name
	run(t, "ip", "-n", name, "link", "add", ifName, "type", "veth", "peer", "name", "nsm-peer")
	run(t, "ip", "-n", name, "link", "set", "nsm-peer", "up")
	run(t, "ip", "-n", name, "link", "set", ifName, "up")
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(handle.Close)
	link, err := handle.LinkByName(ifName)
	if err != nil {
		t.Fatal(err)
	}
	return &clientNamespace{name: name, handle: handle, ns: ns, link: link}
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (c *clientNamespace) request(srcRoutes ...*networkservice.Route) *networkservice.NetworkServiceRequest {
	mechanism := kernel.New("file:///var/run/netns/" + c.name)
	kernel.ToMechanism(mechanism).SetInterfaceName(ifName)
	return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id:        "conn-1",
		Mechanism: mechanism,
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: []string{"172.16.0.2/32"},
			DstIpAddrs: []string{"172.16.0.1/32"},
			SrcRoutes:  srcRoutes,
		}},
	}}
}

// routes lists the main-table routes through the test interface as "dst via gw proto N".
func (c *clientNamespace) routes(t *testing.T) []string {
	t.Helper()
	list, err := c.handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: c.link.Attrs().Index, Table: 254},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list {
		if r.Dst != nil && r.Dst.IP.IsLinkLocalUnicast() || r.Dst != nil && r.Dst.IP.IsMulticast() {
			continue
		}
		out = append(out, fmt.Sprintf("%v via %v proto %d", r.Dst, r.Gw, r.Protocol))
	}
	sort.Strings(out)
	return out
}

// countWrites counts route additions, changes and deletions in the namespace until the returned
// function is called; it waits briefly so that late events are not missed.
func (c *clientNamespace) countWrites(t *testing.T) func() int64 {
	t.Helper()
	updates := make(chan netlink.RouteUpdate, 1024)
	done := make(chan struct{})
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &c.ns}); err != nil {
		t.Fatal(err)
	}
	var count atomic.Int64
	go func() {
		for range updates {
			count.Add(1)
		}
	}()
	return func() int64 {
		time.Sleep(200 * time.Millisecond)
		close(done)
		return count.Load()
	}
}

func route(prefix, nextHop string) *networkservice.Route {
	return &networkservice.Route{Prefix: prefix, NextHop: nextHop}
}

func newServer() networkservice.NetworkServiceServer {
	return next.NewNetworkServiceServer(linkroutes.NewServer())
}

func TestRequestInstallsLinkAndNextHopRoutes(t *testing.T) {
	c := newClientNamespace(t)
	if _, err := newServer().Request(context.Background(), c.request(route("10.10.0.0/16", ""), route("10.20.0.0/16", "172.16.0.9"))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"10.10.0.0/16 via 172.16.0.1 proto 250",
		"10.20.0.0/16 via 172.16.0.9 proto 250",
		"172.16.0.1/32 via <nil> proto 250",
	}
	if got := c.routes(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("routes = %q\nwant     %q", got, want)
	}
}

func TestHealRemovesDroppedRoutesAndMovesChangedNextHops(t *testing.T) {
	c := newClientNamespace(t)
	server := newServer()
	if _, err := server.Request(context.Background(), c.request(route("10.10.0.0/16", ""), route("10.20.0.0/16", "172.16.0.9"))); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", c.name, "route", "add", "10.99.0.0/16", "dev", ifName, "proto", "static")

	if _, err := server.Request(context.Background(), c.request(route("10.20.0.0/16", "172.16.0.7"))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"10.20.0.0/16 via 172.16.0.7 proto 250",
		"10.99.0.0/16 via <nil> proto 4",
		"172.16.0.1/32 via <nil> proto 250",
	}
	if got := c.routes(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after heal routes = %q\nwant                %q", got, want)
	}
}

func TestRestartWithIntactStateWritesNothing(t *testing.T) {
	c := newClientNamespace(t)
	request := c.request(route("0.0.0.0/0", ""), route("10.10.0.0/16", ""), route("2001:db8::/64", "fd00::1"))
	request.GetConnection().GetContext().GetIpContext().DstIpAddrs = append(request.GetConnection().GetContext().GetIpContext().DstIpAddrs, "fd00::1/128")
	if _, err := newServer().Request(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	before := c.routes(t)

	writes := c.countWrites(t)
	if _, err := newServer().Request(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 0 {
		t.Errorf("a fresh element re-applying the same context made %d route writes, want 0", n)
	}
	if after := c.routes(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("routes changed: %q -> %q", before, after)
	}
}

func TestCloseRemovesOnlyMarkedRoutes(t *testing.T) {
	c := newClientNamespace(t)
	server := newServer()
	request := c.request(route("10.10.0.0/16", ""))
	conn, err := server.Request(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", c.name, "route", "add", "10.99.0.0/16", "dev", ifName, "proto", "static")
	if _, err := server.Close(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if got := c.routes(t); fmt.Sprint(got) != "[10.99.0.0/16 via <nil> proto 4]" {
		t.Fatalf("after Close routes = %q, want only the foreign one", got)
	}
}

func TestInvalidRoutesAreRejectedBeforeAnyWrite(t *testing.T) {
	c := newClientNamespace(t)
	for _, bad := range []*networkservice.Route{
		route("10.10.0.0", ""),
		route("10.10.0.0/16", "not-an-ip"),
		route("10.10.0.0/16", "fd00::1"),
	} {
		var nextCalled bool
		server := next.NewNetworkServiceServer(linkroutes.NewServer(),
			checkrequest.NewServer(t, func(*testing.T, *networkservice.NetworkServiceRequest) { nextCalled = true }))
		_, err := server.Request(context.Background(), c.request(bad))
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("route %v: err = %v, want InvalidArgument", bad, err)
		}
		if nextCalled {
			t.Errorf("route %v: the rest of the chain ran for an invalid request", bad)
		}
		if got := c.routes(t); len(got) != 0 {
			t.Errorf("route %v: routes written for an invalid request: %q", bad, got)
		}
	}
}
