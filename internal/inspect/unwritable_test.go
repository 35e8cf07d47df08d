package inspect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/inspect"
)

// inspect says when the journal's directory takes no writes: restart recovery is then off.
func TestInspectSaysWhenRestartRecoveryIsOff(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	state := t.TempDir()
	sources := inspect.Sources{JournalDir: filepath.Join(state, "forwarder"), VPPSocket: filepath.Join(state, "no-vpp.sock")}
	writable := inspect.Gather(context.Background(), sources)
	require.Empty(t, writable.Journal.Unwritable)

	require.NoError(t, unix.Mount(state, state, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(state, unix.MNT_DETACH) })
	require.NoError(t, unix.Mount("", state, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""))
	report := inspect.Gather(context.Background(), sources)
	require.Contains(t, report.Journal.Unwritable, "read-only file system")
	var text bytes.Buffer
	require.NoError(t, inspect.WriteText(&text, report))
	require.Contains(t, text.String(), "RESTART RECOVERY OFF")
}
