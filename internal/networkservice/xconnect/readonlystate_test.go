package xconnect_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// A forwarder whose state directory is read-only serves a Request (the client pings through it),
// and once the directory is writable the connection's record is on disk: a restart after that
// finds it and adopts it again.
func TestReadOnlyStateDirServesAndJournalsOnceWritable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	vpp := startTestVPP(t, vpptest.Sim, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	peers := newRestartPeers(ctx, t)
	state := t.TempDir()
	require.NoError(t, unix.Mount(state, state, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(state, unix.MNT_DETACH) })
	require.NoError(t, unix.Mount("", state, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""))
	journalDir := filepath.Join(state, "forwarder")

	a := startLife(t, vpp, kernelif.Veth, journalDir, nil)
	require.False(t, a.journal.Writable())
	conn, err := peers.request(t, a.forwarder, kernelRequest("conn-ro", peers.nsc.Path(), "nsc-1", payload.Ethernet))
	require.NoError(t, err, "a read-only state directory refused a Request")
	require.NoError(t, vppsimtest.Ping(peers.nsc, nscIP, nseIP, 5*time.Second))
	owner := conn.GetPath().GetPathSegments()[1].GetId()
	_, err = journal.Read(journalDir)
	require.Error(t, err, "something was written to a read-only directory")

	require.NoError(t, unix.Mount("", state, "", unix.MS_BIND|unix.MS_REMOUNT, ""))
	require.Eventually(t, func() bool {
		records, err := journal.Read(journalDir)
		return err == nil && len(records) == 1 && records[0].ID == owner && records[0].Committed != nil
	}, 20*time.Second, 50*time.Millisecond, "the connection's record did not appear once the directory was writable")
	a.die()

	b := startLife(t, vpp, kernelif.Veth, journalDir, nil)
	require.Equal(t, []string{owner}, b.leftovers.Owners(), "the restarted forwarder does not know the connection")
}
