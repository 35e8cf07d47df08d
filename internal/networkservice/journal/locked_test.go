package journal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// Locked reads the lock's state without taking it: an operator's look never holds up a forwarder.
func TestLockedSaysWhetherAForwarderHoldsTheJournal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "forwarder")
	locked, err := journal.Locked(dir)
	require.NoError(t, err)
	require.False(t, locked, "a journal that does not exist yet")

	j, err := journal.Open(context.Background(), dir)
	require.NoError(t, err)
	locked, err = journal.Locked(dir)
	require.NoError(t, err)
	require.True(t, locked, "the open journal's lock")
	second, err := journal.Open(context.Background(), dir)
	require.Error(t, err, "Locked took the lock away from its holder")
	require.Nil(t, second)

	require.NoError(t, j.Close())
	locked, err = journal.Locked(dir)
	require.NoError(t, err)
	require.False(t, locked, "the lock of a closed journal")
	_, err = os.Stat(filepath.Join(dir, "lock"))
	require.NoError(t, err, "the lock file stays; only its flock tells")
}
