package vppinit_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// newTestNetns creates a named namespace (fcmd prefix), brings its lo up and returns a netlink
// handle inside it. The namespace is deleted when the test ends, whatever happened.
func newTestNetns(t *testing.T) *netlink.Handle {
	if os.Geteuid() != 0 {
		t.Skip("creating network namespaces needs root")
	}
	name := fmt.Sprintf("fcmd-%d-%d", os.Getpid(), rand.IntN(1_000_000))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	origin, err := netns.Get()
	require.NoError(t, err)
	defer func() { _ = origin.Close() }()
	created, err := netns.NewNamed(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = netns.DeleteNamed(name) })
	require.NoError(t, netns.Set(origin))

	handle, err := netlink.NewHandleAt(created)
	_ = created.Close()
	require.NoError(t, err)
	t.Cleanup(handle.Close)

	lo, err := handle.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, handle.LinkSetUp(lo))
	return handle
}

// addVeth creates a veth pair in the namespace, brings it up and returns the named end.
func addVeth(t *testing.T, handle *netlink.Handle, name, peer string) netlink.Link {
	mac, err := net.ParseMAC("02:fc:00:00:00:01")
	require.NoError(t, err)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: 1450, HardwareAddr: mac}, PeerName: peer}
	require.NoError(t, handle.LinkAdd(veth))
	link, err := handle.LinkByName(name)
	require.NoError(t, err)
	peerLink, err := handle.LinkByName(peer)
	require.NoError(t, err)
	require.NoError(t, handle.LinkSetUp(link))
	require.NoError(t, handle.LinkSetUp(peerLink))
	return link
}

func mustCIDR(t *testing.T, cidr string) *net.IPNet {
	ip, ipNet, err := net.ParseCIDR(cidr)
	require.NoError(t, err)
	ipNet.IP = ip
	return ipNet
}
