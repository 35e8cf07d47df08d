package vppinit_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// netnsPrefix starts the name of every namespace these tests create.
const netnsPrefix = "fcs"

// newTestNetns creates a namespace (lo up, deleted when the test ends, whatever happened) and
// returns it with a netlink handle inside it.
func newTestNetns(t *testing.T) (*vppsimtest.Netns, *netlink.Handle) {
	ns := vppsimtest.NewNetns(t, netnsPrefix)
	nsHandle, err := netns.GetFromName(ns.Name)
	require.NoError(t, err)
	defer func() { _ = nsHandle.Close() }()
	handle, err := netlink.NewHandleAt(nsHandle)
	require.NoError(t, err)
	t.Cleanup(handle.Close)
	return ns, handle
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
