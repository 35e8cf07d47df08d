package vppconn

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// silentVPPEnv makes the test binary, run as vpp, a VPP that creates its API socket and never
// answers on it, as one that misread its clock at start-up may do.
const silentVPPEnv = "VPPCONN_TEST_SILENT_VPP"

func init() {
	if os.Getenv(silentVPPEnv) == "" {
		return
	}
	// vpphelper runs `vpp -c <root>/etc/vpp/helper/vpp.conf`; VPP's socket is <root>/var/run/vpp/api.sock.
	root := strings.TrimSuffix(os.Args[len(os.Args)-1], "/etc/vpp/helper/vpp.conf")
	launches := filepath.Join(root, "launches")
	count, _ := os.ReadFile(launches)
	_ = os.WriteFile(launches, append(count, '+'), 0o600)
	socket := filepath.Join(root, "var/run/vpp/api.sock")
	_ = os.Remove(socket)
	if _, err := net.Listen("unix", socket); err != nil {
		os.Exit(2)
	}
	select {}
}

func TestOwnVPPSilentOnItsNewSocketIsStartedAgainThenRefused(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(self, filepath.Join(bin, "vpp")))
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv(silentVPPEnv, "1")
	saved := answerBound
	answerBound = 300 * time.Millisecond
	t.Cleanup(func() { answerBound = saved })
	root := t.TempDir()
	lifetime, stop := context.WithCancel(context.Background())
	defer stop()

	start := time.Now()
	_, err = Connect(context.Background(), filepath.Join(root, "absent.sock"), WithRootDir(root), WithLifetime(lifetime), WithStartTimeout(time.Minute))

	require.ErrorContains(t, err, "did not answer on "+filepath.Join(root, "var/run/vpp/api.sock")+" within 300ms of creating it")
	require.Less(t, time.Since(start), 20*time.Second, "three silent runs end long before the start timeout")
	launches, readErr := os.ReadFile(filepath.Join(root, "launches"))
	require.NoError(t, readErr)
	require.Equal(t, strconv.Itoa(ownVPPRuns), strconv.Itoa(len(launches)), "VPP runs started")
}
