package journal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// readOnlyMount makes dir a read-only bind mount of itself until the test ends; writable remounts
// it read-write. (Not back: a mount with files open for writing cannot be made read-only.)
func readOnlyMount(t *testing.T, dir string) (writable func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	require.NoError(t, unix.Mount(dir, dir, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	remount := func(flags uintptr) func() {
		return func() { require.NoError(t, unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|flags, "")) }
	}
	remount(unix.MS_RDONLY)()
	return remount(0)
}

// smallTmpfs mounts a small tmpfs on dir; fill fills it up, free makes room again.
func smallTmpfs(t *testing.T, dir string) (fill, free func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	fill = func() {
		f, err := os.Create(filler)
		require.NoError(t, err)
		for err == nil {
			_, err = f.Write(make([]byte, 4096))
		}
		require.ErrorIs(t, err, unix.ENOSPC)
		require.NoError(t, f.Close())
	}
	return fill, func() { require.NoError(t, os.Remove(filler)) }
}

// recordIDs are the IDs of the records on disk in dir.
func recordIDs(t *testing.T, dir string) []string {
	t.Helper()
	records, err := journal.Read(dir)
	if err != nil {
		return nil
	}
	ids := []string{}
	for _, rec := range records {
		ids = append(ids, rec.ID)
	}
	return ids
}

func eventuallyOnDisk(t *testing.T, j *journal.Journal, dir string, ids ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return j.Writable() && equalIDs(recordIDs(t, dir), ids)
	}, 20*time.Second, 20*time.Millisecond, "the journal did not write what it holds once the directory took writes: %v on disk", recordIDs(t, dir))
}

func equalIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A journal directory on a read-only filesystem does not stop the journal: what the previous run
// left is read, connections are recorded in memory, and once the directory takes writes again the
// journal holds it locked and writes the whole current set, the records forgotten meanwhile
// removed.
func TestReadOnlyDirectoryIsJournaledOnceWritable(t *testing.T) {
	defer journal.SetReprobeDelays(20*time.Millisecond, 50*time.Millisecond)()
	state := t.TempDir()
	dir := filepath.Join(state, "forwarder-a")
	previous := open(t, dir)
	program(t, previous, kernelConnection("conn-0", "", "inode://4/4026532000"), nil)
	require.NoError(t, previous.Close())
	writable := readOnlyMount(t, state)

	j, err := journal.Open(context.Background(), dir)
	require.NoError(t, err, "a read-only journal directory stopped the journal")
	defer func() { _ = j.Close() }()
	require.False(t, j.Writable())
	require.Len(t, j.Records(), 1, "the previous run's record was not read")
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), outgoingConnection("conn-1", ""))
	require.NoError(t, j.Forget("conn-0"))
	require.NotNil(t, j.Lookup("conn-1").Committed, "the journal holds what it could not write")
	require.Equal(t, []string{"conn-0"}, recordIDs(t, dir))

	require.Contains(t, journal.Unwritable(dir), "read-only file system", "inspect would not see why")
	writable()
	eventuallyOnDisk(t, j, dir, "conn-1")
	require.Empty(t, journal.Unwritable(dir))
	locked, err := journal.Locked(dir)
	require.NoError(t, err)
	require.True(t, locked, "the journal writes without holding its lock")
}

// A directory that was never created (its parent read-only) is created once it can be.
func TestMissingDirectoryOnAReadOnlyParentIsCreatedOnceWritable(t *testing.T) {
	defer journal.SetReprobeDelays(20*time.Millisecond, 50*time.Millisecond)()
	state := t.TempDir()
	writable := readOnlyMount(t, state)
	dir := filepath.Join(state, "forwarder-a")
	j, err := journal.Open(context.Background(), dir, journal.AdoptSiblings("key"))
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	require.False(t, j.Writable())
	require.Contains(t, journal.Unwritable(dir), state+": read-only file system", "inspect would not see why")
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)

	writable()
	eventuallyOnDisk(t, j, dir, "conn-1")
}

// A full filesystem is found at Open, and one that fills up while the forwarder runs switches the
// journal to memory at the first write that fails: the Request it records still succeeds.
func TestFullFilesystemIsJournaledOnceThereIsRoom(t *testing.T) {
	defer journal.SetReprobeDelays(20*time.Millisecond, 50*time.Millisecond)()
	state := t.TempDir()
	fill, free := smallTmpfs(t, state)
	dir := filepath.Join(state, "forwarder-a")
	require.NoError(t, os.Mkdir(dir, 0o700))
	fill()
	j, err := journal.Open(context.Background(), dir)
	require.NoError(t, err, "a full journal directory stopped the journal")
	defer func() { _ = j.Close() }()
	require.False(t, j.Writable())
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)
	require.Empty(t, recordIDs(t, dir))
	require.Contains(t, journal.Unwritable(dir), "no space left on device", "inspect would not see why")

	free()
	eventuallyOnDisk(t, j, dir, "conn-1")
}

// A filesystem that fills up while the forwarder runs: the write that fails switches the journal
// to memory, and everything changed meanwhile (a record forgotten included) is on disk once there
// is room again.
func TestFilesystemThatFillsUpWhileRunning(t *testing.T) {
	defer journal.SetReprobeDelays(20*time.Millisecond, 50*time.Millisecond)()
	state := t.TempDir()
	fill, free := smallTmpfs(t, state)
	dir := filepath.Join(state, "forwarder-a")
	j := open(t, dir)
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)
	program(t, j, kernelConnection("conn-2", "", "inode://4/4026532000"), nil)
	require.True(t, j.Writable())

	fill()
	program(t, j, kernelConnection("conn-3", "", "inode://4/4026532000"), nil)
	require.False(t, j.Writable(), "a write the full filesystem refused went unnoticed")
	require.NoError(t, j.Forget("conn-1"))
	require.Equal(t, []string{"conn-1", "conn-2"}, recordIDs(t, dir))

	free()
	eventuallyOnDisk(t, j, dir, "conn-2", "conn-3")
}
