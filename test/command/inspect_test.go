package command_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// inspect only reads: with no VPP socket it says so, exits 1 naming what it could not read, and
// never starts the vpp binary on PATH (the forwarder itself would); it creates no journal directory.
func TestInspectStartsNothingAndCreatesNothing(t *testing.T) {
	bin, stateDir := t.TempDir(), filepath.Join(t.TempDir(), "state")
	started := filepath.Join(t.TempDir(), "vpp-started")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "vpp"), []byte("#!/bin/sh\ntouch "+started+"\nsleep 30\n"), 0o755)) //nolint:gosec // an executable stand-in
	cmd := command(t, "NSM_STATE_DIR="+stateDir, "NSM_VPP_API_SOCKET="+filepath.Join(t.TempDir(), "api.sock"))
	cmd.Env[0] = "PATH=" + bin
	cmd.Args = append(cmd.Args, "inspect", "-json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.Error(t, err)
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), "inspect reports what it could not read, and fails")
	require.Contains(t, stderr.String(), "could not read the journal "+filepath.Join(stateDir, "forwarder"))
	require.Contains(t, stderr.String(), "could not read VPP")

	var report struct {
		Journal struct{ Error string }
		VPP     struct{ Error string }
	}
	require.NoError(t, json.Unmarshal(out, &report), "%s", out)
	require.Contains(t, report.VPP.Error, "no VPP API socket")
	require.NotEmpty(t, report.Journal.Error)
	require.NoFileExists(t, started, "inspect started VPP")
	require.NoDirExists(t, stateDir, "inspect created the state directory")
}

func TestInspectRefusesUnknownFlags(t *testing.T) {
	cmd := command(t)
	cmd.Args = append(cmd.Args, "inspect", "-bogus")
	require.Error(t, cmd.Run())
	require.Equal(t, 2, cmd.ProcessState.ExitCode())
}

func TestInspectHelpIsOnStdout(t *testing.T) {
	cmd := command(t)
	cmd.Args = append(cmd.Args, "inspect", "-h")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "inspect -h exits 0")
	require.Contains(t, string(out), "Usage: forwarder-vpp inspect [-json]")
	require.Empty(t, stderr.String())
}
