package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/inspect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// run runs `forwarder-vpp inspect args` with the given variables, the rest of NSM_* unset.
func run(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NSM_") {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}
	for name, value := range env {
		t.Setenv(name, value)
	}
	var out, errOut bytes.Buffer
	code = inspect.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// journalDir makes the journal directory of a forwarder named NSM_NAME under a state directory,
// empty as a forwarder's without connections.
func journalDir(t *testing.T) (stateDir string) {
	stateDir = t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(stateDir, "forwarder"), 0o700))
	return stateDir
}

func TestHelpGoesToStdoutAndExitsZero(t *testing.T) {
	for _, flag := range []string{"-h", "-help", "--help"} {
		code, stdout, stderr := run(t, nil, flag)
		require.Equal(t, 0, code, flag)
		require.Contains(t, stdout, "Usage: forwarder-vpp inspect [-json]", flag)
		require.Contains(t, stdout, "-json", flag)
		require.Empty(t, stderr, flag)
	}
}

func TestUnknownFlagIsAUsageErrorOnStderr(t *testing.T) {
	code, stdout, stderr := run(t, nil, "-bogus")
	require.Equal(t, 2, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "-bogus")
	require.Contains(t, stderr, "Usage: forwarder-vpp inspect")
}

// With NSM_VPP_API_SOCKET absent the forwarder starts its own VPP, whose API socket is
// vpphelper's; inspect reads that VPP, as the forwarder uses it.
func TestOwnVPPIsReadWhereTheForwarderStartsIt(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	t.Cleanup(inspect.SetOwnVPPSocket(sim.APISocket()))
	code, stdout, stderr := run(t, map[string]string{
		"NSM_STATE_DIR":      journalDir(t),
		"NSM_VPP_API_SOCKET": filepath.Join(t.TempDir(), "no-external-vpp.sock"),
	}, "-json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	report := &inspect.Report{}
	require.NoError(t, json.Unmarshal([]byte(stdout), report), stdout)
	require.Equal(t, sim.APISocket(), report.VPP.Socket)
	require.Empty(t, report.VPP.Error)
	require.Empty(t, report.Journal.Error)
	require.Positive(t, report.VPP.Interfaces, "local0 at least")
}

// An external VPP's socket (it exists) wins over the own VPP's, as in the forwarder.
func TestExternalVPPIsReadAtItsSocket(t *testing.T) {
	external, own := vppsimtest.StartSim(t, ""), vppsimtest.StartSim(t, "")
	t.Cleanup(inspect.SetOwnVPPSocket(own.APISocket()))
	code, stdout, stderr := run(t, map[string]string{
		"NSM_STATE_DIR":      journalDir(t),
		"NSM_VPP_API_SOCKET": external.APISocket(),
	})
	require.Equal(t, 0, code, "stderr: %s", stderr)
	require.Contains(t, stdout, "VPP "+external.APISocket()+":")
	require.Empty(t, stderr)
}

func TestNothingReadableExitsNonZeroNamingEach(t *testing.T) {
	t.Cleanup(inspect.SetOwnVPPSocket(filepath.Join(t.TempDir(), "no-own-vpp.sock")))
	stateDir, external := t.TempDir(), filepath.Join(t.TempDir(), "no-external-vpp.sock")
	code, stdout, stderr := run(t, map[string]string{"NSM_STATE_DIR": stateDir, "NSM_VPP_API_SOCKET": external})
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "journal "+filepath.Join(stateDir, "forwarder"), "the report is still printed")
	require.Contains(t, stderr, "could not read the journal "+filepath.Join(stateDir, "forwarder"))
	require.Contains(t, stderr, "could not read VPP")
	require.Contains(t, stderr, external, "the external VPP's socket it tried")
	require.Contains(t, stderr, "no-own-vpp.sock", "and the own VPP's")
}

func TestUnreadableVPPAloneExitsNonZeroNamingIt(t *testing.T) {
	t.Cleanup(inspect.SetOwnVPPSocket(filepath.Join(t.TempDir(), "no-own-vpp.sock")))
	code, _, stderr := run(t, map[string]string{
		"NSM_STATE_DIR":      journalDir(t),
		"NSM_VPP_API_SOCKET": filepath.Join(t.TempDir(), "no-external-vpp.sock"),
	}, "-json")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "could not read VPP")
	require.NotContains(t, stderr, "journal")
}

func TestUnreadableJournalAloneExitsNonZeroNamingIt(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	stateDir := t.TempDir()
	code, _, stderr := run(t, map[string]string{"NSM_STATE_DIR": stateDir, "NSM_VPP_API_SOCKET": sim.APISocket()})
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "could not read the journal "+filepath.Join(stateDir, "forwarder"))
	require.NotContains(t, stderr, "VPP")
}
