package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// forwarderEnd is what a run records of the forwarder's end of a veth pair made in the node
// namespace by v.veth.
func (v *sharedVPP) forwarderEnd(t *testing.T, name string) *journal.Link {
	t.Helper()
	link, err := v.nodeLink.LinkByName(name)
	require.NoError(t, err)
	return &journal.Link{Name: name, Index: link.Attrs().Index, MAC: link.Attrs().HardwareAddr.String()}
}

// recordHop commits conn in j as a run does once its Request succeeded, the client's side over
// clientSide.
func recordHop(t *testing.T, j *journal.Journal, client *clientNetns, conn *networkservice.Connection, clientSide journal.Interface) {
	t.Helper()
	conn = conn.Clone()
	kernel.ToMechanism(conn.GetMechanism()).SetNetNSURL(client.fileURL)
	require.NoError(t, j.Begin(conn.GetId(), conn))
	require.NoError(t, j.Commit(conn.GetId(), conn, nil, []journal.Interface{clientSide}))
}

// Hop 1 and hop 2 of a local chain each have a veth pair whose forwarder end carries the same
// alias (sdk-vpp names it after the chain's client): releasing hop 2, after a restart or when its
// first Request fails, takes hop 2's pair and VPP interface only.
func TestReleasingOneHopLeavesTheOtherHopsVeth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("grace period after a restart", func(t *testing.T) {
		v := newSharedVPP(t)
		journalDir := t.TempDir()
		v.veth(ctx, t, "fwd-h1", "veth-server-nsc-1", "hop1-fwd")
		live := v.interfaces()
		j, err := journal.Open(ctx, journalDir)
		require.NoError(t, err)
		hop2 := v.veth(ctx, t, "fwd-h2", "veth-server-nsc-1", "hop2-fwd")
		recordHop(t, j, v.client, chainHop(v.client, 2, "forwarder"),
			journal.Interface{Tag: "hop2-fwd", SwIfIndex: uint32(hop2), Peer: v.forwarderEnd(t, "fwd-h2")})
		require.NoError(t, j.Close())

		j, err = journal.Open(ctx, journalDir)
		require.NoError(t, err)
		defer func() { _ = j.Close() }()
		leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
		require.NoError(t, err)
		require.NoError(t, leftovers.ReleaseOwned(ctx, "hop2-fwd"))
		require.Equal(t, live, v.interfaces(), "hop 2's release took another VPP interface than its own, or left its own")
		require.Equal(t, []string{"veth-server-nsc-1"}, v.nodeAliases(t), "hop 2's release took hop 1's veth, or left its own")
		_, err = v.nodeLink.LinkByName("fwd-h1")
		require.NoError(t, err, "hop 1's veth is gone")
	})
	t.Run("failed first Request", func(t *testing.T) {
		v := newSharedVPP(t)
		v.veth(ctx, t, "fwd-h1", "veth-server-nsc-1", "hop1-fwd")
		live, aliases := v.interfaces(), v.nodeAliases(t)
		run := startForwarderRun(t, v.client, t.TempDir(), v.conn, v.nodeLink, failsRequests{})
		_, err := run.chain.Request(ctx, firstRequest(chainHop(v.client, 2, "forwarder")))
		require.Error(t, err)
		require.Equal(t, live, v.interfaces(), "the failed Request's release took another hop's VPP interface")
		require.Equal(t, aliases, v.nodeAliases(t), "the failed Request's release took another hop's veth")
	})
}

// A client names its connection after another agent's VPP tag, and its Request fails once the
// journal recorded it: the release that follows must not take the other agent's interface, which
// carries the tag but was never this forwarder's.
func TestATagAloneNeverProvesOwnership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	v.tap(ctx, t, "cali1", "calico-pod-1")
	foreign := v.interfaces()
	run := startForwarderRun(t, v.client, t.TempDir(), v.conn, v.nodeLink, failsRequests{})
	_, err := run.chain.Request(ctx, firstRequest(v.client.connection("calico-pod-1", "nsm-1", 1)))
	require.Error(t, err)
	require.Equal(t, foreign, v.interfaces(), "the release of a failed Request took another agent's interface by its tag")
	_, err = run.chain.Close(ctx, v.client.connection("calico-pod-1", "nsm-1", 1))
	require.NoError(t, err)
	require.Equal(t, foreign, v.interfaces(), "a Close took another agent's interface by its tag")
}

// A recorded interface whose index now holds another interface with the same tag (VPP restarted
// and reused the index for another agent's tap, named after the same ID) is not the recorded one.
func TestARecordedIndexWithAnotherKindIsNotReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	index := v.tap(ctx, t, "cali1", "hop1-fwd")
	foreign := v.interfaces()
	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	recordHop(t, j, v.client, chainHop(v.client, 1, "forwarder"),
		journal.Interface{Tag: "hop1-fwd", SwIfIndex: uint32(index), Peer: &journal.Link{Name: "fwd-h1", Index: 9999, MAC: "02:00:00:00:00:01"}})
	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseAll(ctx))
	require.Equal(t, foreign, v.interfaces(), "a tap was released for a recorded af_packet interface")
}
