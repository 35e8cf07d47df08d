package xconnect_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

var netnsCounter atomic.Int32

// newTestNetNS creates a named namespace with lo up and removes it when the test ends. It returns
// the namespace's file path.
func newTestNetNS(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("fchn-%d-%d", os.Getpid(), netnsCounter.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return filepath.Join("/var/run/netns", name)
}

func run(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "%v: %s", args, out)
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
