package netnsid_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
}

func TestIdentityFindsTheSameNamespaceAgain(t *testing.T) {
	requireRoot(t)
	ns := vppsimtest.NewNetns(t, "nid")
	id, err := netnsid.Of(ns.Path())
	require.NoError(t, err)
	require.NotZero(t, id.Cookie)
	require.NotEmpty(t, id.Boot)

	f, found, err := netnsid.Open(id)
	require.NoError(t, err)
	require.True(t, found)
	defer func() { _ = f.Close() }()
	again, err := netnsid.Of(f.Name())
	require.NoError(t, err)
	require.Equal(t, id, again)
	viaFD, err := netnsid.OfURL(netnsid.FileURL(f))
	require.NoError(t, err)
	require.Equal(t, id, viaFD, "the file URL of the opened namespace names it")
}

// A recorded inode that now belongs to another namespace must not be taken for the recorded one:
// the kernel reuses nsfs inodes, so the record is rewritten to carry another live namespace's inode
// next to the recorded namespace's cookie, as after a reuse.
func TestInodeOfAnotherNamespaceIsNotTheRecordedOne(t *testing.T) {
	requireRoot(t)
	recorded, other := vppsimtest.NewNetns(t, "nid"), vppsimtest.NewNetns(t, "nid")
	id, err := netnsid.Of(recorded.Path())
	require.NoError(t, err)
	otherID, err := netnsid.Of(other.Path())
	require.NoError(t, err)
	require.NotEqual(t, id.Cookie, otherID.Cookie)

	reused := id
	reused.Dev, reused.Ino = otherID.Dev, otherID.Ino
	_, found, err := netnsid.Open(reused)
	require.NoError(t, err)
	require.False(t, found, "a namespace with the recorded inode but another cookie was taken for the recorded one")
}

func TestGoneNamespaceAndOtherBootAreNotFound(t *testing.T) {
	requireRoot(t)
	name := "nidgone" + strconv.Itoa(os.Getpid())
	runtime.LockOSThread()
	origin, err := netns.Get()
	require.NoError(t, err)
	created, err := netns.NewNamed(name)
	require.NoError(t, netns.Set(origin))
	runtime.UnlockOSThread()
	_ = origin.Close()
	require.NoError(t, err)
	_ = created.Close()
	t.Cleanup(func() { _ = netns.DeleteNamed(name) })
	id, err := netnsid.Of("/var/run/netns/" + name)
	require.NoError(t, err)

	otherBoot := id
	otherBoot.Boot = "00000000-0000-0000-0000-000000000000"
	_, found, err := netnsid.Open(otherBoot)
	require.NoError(t, err)
	require.False(t, found, "a namespace recorded before a reboot was found after it")

	require.NoError(t, netns.DeleteNamed(name))
	_, found, err = netnsid.Open(id)
	require.NoError(t, err)
	require.False(t, found, "a deleted namespace was found")
}

func TestNotANetworkNamespaceIsRefused(t *testing.T) {
	_, err := netnsid.Of("/proc/self/ns/mnt")
	require.Error(t, err)
	_, err = netnsid.OfURL("inode://4/4026532000")
	require.Error(t, err)
}

// On a kernel without SO_NETNS_COOKIE an identity is only an inode: it is never acted on.
func TestIdentityWithoutCookieIsNeverOpened(t *testing.T) {
	requireRoot(t)
	ns := vppsimtest.NewNetns(t, "nid")
	id, err := netnsid.Of(ns.Path())
	require.NoError(t, err)
	require.True(t, id.Proven())
	id.Cookie = 0
	require.False(t, id.Proven())
	_, found, err := netnsid.Open(id)
	require.Error(t, err)
	require.False(t, found)
}
