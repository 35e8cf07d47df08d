package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
)

// The grace period of a previous run's connection ends while a Request for it holds the
// connection's lock (the chain's expiry element holds it around each Request): the release waits,
// the Request adopts the connection untouched, and the release then finds nothing left to do.
func TestGracePeriodReleaseWaitsForARequestThatBegan(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	_, both := previousLife(t, client, journalDir, vppConn, fwdNetns)
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	locks := expiry.NewLocks()
	second.leftovers.SerializeWith(locks.Do)
	watch, err := netwatch.Start("/var/run/netns/" + client.name)
	require.NoError(t, err)
	defer func() { _, _ = watch.Stop() }()

	held, proceed, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go locks.Do("conn-a", func() {
		defer close(done)
		close(held)
		<-proceed
		second.request(t, client.connection("conn-a", "nsm-a", 1))
	})
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second.leftovers.ExpireAfter(ctx, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, []string{"conn-a", "conn-b"}, recordIDs(t, journalDir), "the grace period released a connection whose Request holds its lock")
	close(proceed)
	<-done

	require.Eventually(t, func() bool { return len(second.leftovers.Owners()) == 0 }, 5*time.Second, 20*time.Millisecond)
	events, err := watch.Settle()
	require.NoError(t, err)
	require.Empty(t, netwatch.Writes(events), "the grace period's release raced the Request that adopted the connection")
	require.Equal(t, both, client.marked(t))
	require.Equal(t, []string{"conn-a", "conn-b"}, recordIDs(t, journalDir))
}

// A Request that holds its connection's lock (the chain's expiry element holds it around each
// Request) fails after the grace period ended: the leftover it gives back is released once the
// Request has let go of the lock, not under it, where the release would wait for itself.
func TestLeftoverGivenBackUnderTheConnectionLockIsReleasedAfterTheRequest(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
	held := &holdsRequests{id: "conn-a", arrived: make(chan struct{}), release: make(chan struct{})}
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns, held)
	locks := expiry.NewLocks()
	second.leftovers.SerializeWith(locks.Do)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const grace = 300 * time.Millisecond
	second.leftovers.ExpireAfter(ctx, grace)
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	failed := make(chan error, 1)
	go locks.Do("conn-a", func() {
		_, err := second.chain.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: client.connection("conn-a", "nsm-a", 1)})
		failed <- err
	})
	<-held.arrived
	time.Sleep(2 * grace)
	close(held.release)
	select {
	case err := <-failed:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the failed Request never returned: giving its leftover back waited for the lock the Request holds")
	}
	require.Eventually(t, func() bool { return len(recordIDs(t, journalDir)) == 1 }, 5*time.Second, 20*time.Millisecond,
		"the leftover given back after its grace period ended is never released")
	require.Equal(t, []string{"conn-b"}, recordIDs(t, journalDir))
	require.Equal(t, onlyB, client.marked(t))
}
