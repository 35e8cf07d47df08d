package journal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

const podKey = "service=forwarder vpp=/var/run/vpp/external/vpp-api.sock"

// A DaemonSet names each forwarder pod anew: the replacement adopts what its predecessor recorded,
// but never the journal of a forwarder that still runs or that serves another data plane.
func TestReplacedPodsJournalIsAdoptedOnlyWhenItsForwarderIsGone(t *testing.T) {
	stateDir := t.TempDir()
	previous := open(t, filepath.Join(stateDir, "forwarder-abcde"), journal.AdoptSiblings(podKey))
	program(t, previous, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)
	require.NoError(t, os.MkdirAll(filepath.Join(previous.Dir(), "unreadable"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(previous.Dir(), "unreadable", "broken.json"), []byte("{"), 0o600))
	other := open(t, filepath.Join(stateDir, "other-forwarder"), journal.AdoptSiblings("service=other vpp=/other.sock"))
	program(t, other, kernelConnection("conn-other", "", "inode://4/4026532000"), nil)
	running := open(t, filepath.Join(stateDir, "forwarder-running"), journal.AdoptSiblings(podKey))
	program(t, running, kernelConnection("conn-running", "", "inode://4/4026532000"), nil)

	// The previous pod died (its lock went with it); the other forwarders are gone or alive.
	require.NoError(t, previous.Close())
	require.NoError(t, other.Close())
	successor := open(t, filepath.Join(stateDir, "forwarder-fghij"), journal.AdoptSiblings(podKey))

	records := successor.Records()
	require.Len(t, records, 1)
	require.Equal(t, "conn-1", records[0].ID)
	_, err := os.Stat(previous.Dir())
	require.True(t, os.IsNotExist(err), "the adopted journal's directory stayed")
	kept, err := os.ReadFile(filepath.Join(successor.Dir(), "unreadable", "forwarder-abcde-broken.json"))
	require.NoError(t, err, "the predecessor's unreadable record was not kept")
	require.Equal(t, "{", string(kept))

	require.NoError(t, successor.Close())
	reopened := open(t, successor.Dir(), journal.AdoptSiblings(podKey))
	require.Len(t, reopened.Records(), 1)
	unreadable, err := os.ReadDir(filepath.Join(successor.Dir(), "unreadable"))
	require.NoError(t, err)
	require.Len(t, unreadable, 1, "the journal took its own files for unreadable records")

	onDisk, err := journal.Read(filepath.Join(stateDir, "other-forwarder"))
	require.NoError(t, err)
	require.Len(t, onDisk, 1, "the journal of a forwarder of another data plane was touched")
	onDisk, err = journal.Read(filepath.Join(stateDir, "forwarder-running"))
	require.NoError(t, err)
	require.Len(t, onDisk, 1, "the journal of a running forwarder was taken")
}
