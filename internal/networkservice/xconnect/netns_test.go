package xconnect_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// netnsPrefix starts the name of every namespace and host link these tests create.
const netnsPrefix = "fsw"

// newTestNetNS creates a named namespace with lo up and removes it when the test ends. It returns
// the namespace's file path.
func newTestNetNS(t *testing.T) string {
	t.Helper()
	return vppsimtest.NewNetns(t, netnsPrefix).Path()
}

// linkNamesIn lists the links of the namespace at path by name, sorted.
func linkNamesIn(t *testing.T, path string) []string {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	links, err := handle.LinkList()
	require.NoError(t, err)
	var names []string
	for _, link := range links {
		names = append(names, link.Attrs().Name)
	}
	sort.Strings(names)
	return names
}

// linkIn returns the named link of the namespace at path, or nil when there is none.
func linkIn(t *testing.T, path, name string) netlink.Link {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	link, err := handle.LinkByName(name)
	if err != nil {
		return nil
	}
	return link
}

func addressesOf(t *testing.T, path string, link netlink.Link) []string {
	t.Helper()
	handle := netlinkHandle(t, path)
	defer handle.Close()
	addrs, err := handle.AddrList(link, netlink.FAMILY_ALL)
	require.NoError(t, err)
	var cidrs []string
	for _, addr := range addrs {
		cidrs = append(cidrs, addr.IPNet.String())
	}
	return cidrs
}

func netlinkHandle(t *testing.T, path string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	require.NoError(t, err)
	defer func() { _ = ns.Close() }()
	handle, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	return handle
}
