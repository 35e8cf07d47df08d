package journal

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
)

// A client that sends Requests the journal cannot record (here: a namespace file that is not one)
// must not grow the journal by one empty entry per connection ID: each failed call leaves the
// journal as it found it.
func TestFailedCallsLeaveNoEntryBehind(t *testing.T) {
	j, err := Open(context.Background(), t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	notANamespace := kernel.New("file:///dev/null")
	for i := range 100 {
		id := fmt.Sprintf("conn-%d", i)
		conn := &networkservice.Connection{Id: id, Mechanism: notANamespace}
		require.Error(t, j.Begin(id, conn))
		require.Error(t, j.Intend(id, conn), "no Request began")
		require.Error(t, j.Commit(id, conn, nil, nil))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	require.Empty(t, j.entries, "failed calls left entries that hold no record")
}

// A Begin that fails changes nothing, not even the retries of an earlier Close's cleanup: that
// Request programmed nothing, so the record is still the retirement's to release.
func TestFailedBeginKeepsTheRetriedCleanupGoing(t *testing.T) {
	defer SetRetryDelays(10*time.Millisecond, 10*time.Millisecond)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	conn := &networkservice.Connection{Id: "conn-1"}
	require.NoError(t, j.Begin("conn-1", conn))
	require.NoError(t, j.Commit("conn-1", conn, nil, nil))

	var calls atomic.Int32
	failing := func(context.Context, *Record) error { calls.Add(1); return errors.New("still busy") }
	require.Error(t, j.Retire(ctx, "conn-1", failing))
	require.Error(t, j.Begin("conn-1", &networkservice.Connection{Id: "conn-1", Mechanism: kernel.New("file:///dev/null")}))
	before := calls.Load()
	require.Eventually(t, func() bool { return calls.Load() > before+2 }, 5*time.Second, 5*time.Millisecond,
		"a Begin that failed stopped the retried cleanup")
}
