package restore

import (
	"context"
	"fmt"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// newNamespaceHandle makes a network namespace for one test and a netlink handle inside it.
func newNamespaceHandle(t *testing.T) *netlink.Handle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	ns, err := netns.GetFromName(vppsimtest.NewNetns(t, "rst").Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(handle.Close)
	return handle
}

func addVethWithAliases(t *testing.T, handle *netlink.Handle, name, alias, peerName, peerAlias string) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peerName}
	if err := handle.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth %s: %v", name, err)
	}
	for linkName, linkAlias := range map[string]string{name: alias, peerName: peerAlias} {
		link, err := handle.LinkByName(linkName)
		if err != nil {
			t.Fatal(err)
		}
		if err := handle.LinkSetAlias(link, linkAlias); err != nil {
			t.Fatal(err)
		}
	}
}

func linkNames(t *testing.T, handle *netlink.Handle) map[string]bool {
	t.Helper()
	links, err := handle.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, link := range links {
		names[link.Attrs().Name] = true
	}
	return names
}

func TestKernelLeftoversAreTheForwarderSideVethEndsOnly(t *testing.T) {
	handle := newNamespaceHandle(t)
	addVethWithAliases(t, handle, "fwd-a", "veth-client-conn-a", "nsc-a", "client-conn-a")
	addVethWithAliases(t, handle, "fwd-b", "veth-server-conn-b", "nse-b", "server-conn-b")
	addVethWithAliases(t, handle, "other", "not-ours", "other-peer", "")

	found, err := scanKernel(handle)
	if err != nil {
		t.Fatal(err)
	}
	leftovers := newLeftovers(found)
	if got := fmt.Sprint(leftovers.Owners()); got != "[conn-a conn-b]" {
		t.Fatalf("owners = %s, want [conn-a conn-b]", got)
	}

	leftovers.ReleaseOwned(context.Background(), "conn-a")
	names := linkNames(t, handle)
	if names["fwd-a"] || names["nsc-a"] {
		t.Errorf("conn-a's veth pair survived its release: %v", names)
	}
	if !names["fwd-b"] || !names["other"] || !names["other-peer"] {
		t.Errorf("release of conn-a removed links it does not own: %v", names)
	}
	if got := fmt.Sprint(leftovers.Owners()); got != "[conn-b]" {
		t.Errorf("owners after release = %s, want [conn-b]", got)
	}
}

func TestUnclaimedLeftoversExpire(t *testing.T) {
	handle := newNamespaceHandle(t)
	addVethWithAliases(t, handle, "fwd-c", "veth-client-conn-c", "nsc-c", "client-conn-c")
	found, err := scanKernel(handle)
	if err != nil {
		t.Fatal(err)
	}
	leftovers := newLeftovers(found)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leftovers.ExpireAfter(ctx, 50*time.Millisecond)

	deadline := time.Now().Add(5 * time.Second)
	for linkNames(t, handle)["fwd-c"] {
		if time.Now().After(deadline) {
			t.Fatal("unclaimed veth still present 5s after a 50ms grace period")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServerReleasesLeftoversOfARequestedConnectionBeforeTheChainRuns(t *testing.T) {
	handle := newNamespaceHandle(t)
	addVethWithAliases(t, handle, "fwd-d", "veth-client-nsc-conn", "nsc-d", "client-nsc-conn")
	addVethWithAliases(t, handle, "fwd-e", "veth-client-someone-else", "nsc-e", "client-someone-else")
	found, err := scanKernel(handle)
	if err != nil {
		t.Fatal(err)
	}
	var presentWhenChainRan map[string]bool
	server := next.NewNetworkServiceServer(
		NewServer(newLeftovers(found)),
		&observeLinks{onRequest: func() { presentWhenChainRan = linkNames(t, handle) }},
	)
	request := &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id: "forwarder-conn",
		Path: &networkservice.Path{PathSegments: []*networkservice.PathSegment{
			{Id: "nsc-conn"}, {Id: "nsmgr-conn"}, {Id: "forwarder-conn"},
		}},
	}}
	if _, err := server.Request(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	if presentWhenChainRan["fwd-d"] {
		t.Error("the connection's old veth was still there when the rest of the chain ran")
	}
	if !presentWhenChainRan["fwd-e"] {
		t.Error("another connection's veth was released by this Request")
	}
}

type observeLinks struct {
	networkservice.NetworkServiceServer
	onRequest func()
}

func (o *observeLinks) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	o.onRequest()
	return request.GetConnection(), nil
}
