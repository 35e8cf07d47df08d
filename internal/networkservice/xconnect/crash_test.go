package xconnect_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/l2"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal/journaltest"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// The forwarder dies after VPP created both sides' interfaces of a first Request and before the
// Request completed. The journal on disk at that instant must already name what was created, so
// that the next run, which nobody asks for the connection again, leaves nothing: no VPP
// interface, no veth end, nothing in either pod. The instant is the cross-connect's request,
// which sdk-vpp sends after both sides exist and are tagged, before the chain's answer reaches
// the journal's commit.
func TestCrashBeforeTheCommitLeavesNothing(t *testing.T) {
	eachKernelKind(t, testCrashBeforeTheCommitLeavesNothing)
}

func testCrashBeforeTheCommitLeavesNothing(t *testing.T, kind kernelif.Kind, backend vpptest.Backend) {
	var node *vppsimtest.Netns
	if kind == kernelif.Tap {
		node = vppsimtest.NewNetns(t, netnsPrefix)
	}
	vpp := startTestVPP(t, backend, node)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	peers := newRestartPeers(ctx, t)
	journalDir, diskAtCrash := t.TempDir(), t.TempDir()

	first := startLife(t, vpp, kind, journalDir, node)
	var crashed sync.Once
	var copyErr error
	first.vppConn.BeforeEachRequest(func(msg api.Message) {
		if _, ok := msg.(*l2.SwInterfaceSetL2Xconnect); ok {
			crashed.Do(func() { copyErr = journaltest.Snapshot(journalDir, diskAtCrash) })
		}
	})
	connID := "conn-crash-" + kind.String()
	_, err := peers.request(t, first.forwarder, kernelRequest(connID, peers.nsc.Path(), "nsc-1", payload.Ethernet))
	require.NoError(t, err)
	require.NoError(t, copyErr)
	records, err := journal.Read(diskAtCrash)
	require.NoError(t, err)
	require.Len(t, records, 1, "no cross-connect was sent, or the journal named nothing at that instant")
	first.die()

	second := startLife(t, vpp, kind, diskAtCrash, node)
	require.Len(t, second.leftovers.Owners(), 1)
	require.NoError(t, second.leftovers.ReleaseAll(ctx))
	vpp.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, peers.nsc.Path()), "the client's interface outlived the release")
	require.Equal(t, []string{"lo"}, linkNamesIn(t, peers.nse.Path()), "the endpoint's interface outlived the release")
	require.Zero(t, forwarderEnds(t, connID), "veth ends left in the forwarder's namespace")
	records, err = journal.Read(diskAtCrash)
	require.NoError(t, err)
	require.Empty(t, records, "the released connection is still in the journal")
}
