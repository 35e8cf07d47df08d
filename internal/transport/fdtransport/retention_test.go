package fdtransport_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// testRetention is short enough for a lean suite and long enough that a loaded machine does not
// mistake one step for the next.
const testRetention = 500 * time.Millisecond

// A claim while the descriptor is held, even more than one for the same message (a mechanism
// preference and the connection's mechanism naming the same namespace), gets its own duplicate.
func TestClaimsWithinRetentionGetTheFileSent(t *testing.T) {
	stock, ours := stockToOurs(t, fdtransport.WithRetention(time.Minute))
	filename := newFile(t, "netns")
	send(t, stock, ours, filename)

	first, second := claim(t, ours, filename, time.Second), claim(t, ours, filename, time.Second)
	require.NotEqual(t, first.Fd(), second.Fd(), "each claim gets a descriptor of its own")
	requireSameFile(t, filename, first)
	requireSameFile(t, filename, second)
}

// A claim made before its descriptor arrived waits for it.
func TestClaimBeforeArrivalGetsTheFileWhenItArrives(t *testing.T) {
	stock, ours := stockToOurs(t)
	filename := newFile(t, "netns")
	dev, ino := inodeOf(t, filename)
	files := ours.RecvFile(dev, ino)
	send(t, stock, ours, filename)

	select {
	case file := <-files:
		requireSameFile(t, filename, file)
	case <-time.After(time.Second):
		t.Fatal("the waiting claim got nothing")
	}
}

// What grpcfd keeps for the life of the connection is released once the retention has passed,
// and a descriptor sent again afterwards is received again.
func TestDescriptorIsReleasedAfterRetentionAndReceivedAgainWhenResent(t *testing.T) {
	stock, ours := stockToOurs(t, fdtransport.WithRetention(testRetention))
	filename := newFile(t, "netns")
	baseline, _ := openDescriptors(t, filename)

	send(t, stock, ours, filename)
	requireSameFile(t, filename, claim(t, ours, filename, time.Second))
	_, held := openDescriptors(t, filename)
	require.Equal(t, 1, held, "the transport holds the descriptor within the retention")

	eventuallyNoneOpen(t, filename, baseline, 4*testRetention)
	dev, ino := inodeOf(t, filename)
	files := ours.RecvFile(dev, ino)
	select {
	case file := <-files:
		t.Fatalf("a released descriptor was claimed: %v", file)
	case <-time.After(testRetention / 5):
	}

	send(t, stock, ours, filename)
	requireSameFile(t, filename, <-files)
	eventuallyNoneOpen(t, filename, baseline, 4*testRetention)
}

// nsmgr re-sends a namespace with every refresh: each arrival restarts its retention.
func TestResentDescriptorIsHeldForTheRetentionAfterItsLastArrival(t *testing.T) {
	stock, ours := stockToOurs(t, fdtransport.WithRetention(testRetention))
	filename := newFile(t, "netns")
	baseline, _ := openDescriptors(t, filename)

	send(t, stock, ours, filename)
	time.Sleep(testRetention * 3 / 5)
	send(t, stock, ours, filename)
	_, held := openDescriptors(t, filename)
	require.Equal(t, 1, held, "a duplicate arrival is closed, the descriptor held is kept")
	time.Sleep(testRetention * 3 / 5)

	// Past the first arrival's retention, within the second's.
	requireSameFile(t, filename, claim(t, ours, filename, testRetention/5))
	eventuallyNoneOpen(t, filename, baseline, 4*testRetention)
}

// A claim for what never arrives ends empty once it has waited the retention: by then its call
// has ended, and a descriptor handed to it would stay open.
func TestClaimForWhatNeverArrivesEndsAfterTheRetention(t *testing.T) {
	_, ours := stockToOurs(t, fdtransport.WithRetention(testRetention))
	dev, ino := inodeOf(t, newFile(t, "never-sent"))
	start := time.Now()
	_, open := <-ours.RecvFD(dev, ino)
	require.False(t, open)
	require.GreaterOrEqual(t, time.Since(start), testRetention, "the claim gave up before the retention")
}

// Closing the connection closes what it holds at once and ends the claims still waiting.
func TestCloseReleasesEverythingAndEndsWaitingClaims(t *testing.T) {
	stock, ours := stockToOurs(t, fdtransport.WithRetention(time.Hour))
	filename, neverSent := newFile(t, "netns"), newFile(t, "never-sent")
	baseline, _ := openDescriptors(t, filename)
	send(t, stock, ours, filename)
	dev, ino := inodeOf(t, neverSent)
	waiting := ours.RecvFD(dev, ino)

	require.NoError(t, ours.Close())
	_, open := <-waiting
	require.False(t, open, "a waiting claim ends empty when the connection closes")
	eventuallyNoneOpen(t, filename, baseline-1, time.Second) // less our end of the socket pair
	dev, ino = inodeOf(t, filename)
	_, open = <-ours.RecvFD(dev, ino)
	require.False(t, open, "nothing is claimable on a closed connection")
}
