package vppconn_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
)

func TestNoSocketAndNoBinaryFailsAtOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	socket := filepath.Join(t.TempDir(), "vpp-api.sock")

	start := time.Now()
	_, err := vppconn.Connect(context.Background(), socket)
	require.Less(t, time.Since(start), time.Second)
	require.EqualError(t, err, `no VPP API socket at `+socket+` and no "vpp" binary on PATH to start one`)
}

// silentSocket accepts connections and never answers, like a VPP that hangs.
func silentSocket(t *testing.T) string {
	socket := filepath.Join(t.TempDir(), "vpp-api.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	return socket
}

func TestSilentExternalVPPFailsWithinTheDialTimeout(t *testing.T) {
	socket := silentSocket(t)

	start := time.Now()
	_, err := vppconn.Connect(context.Background(), socket, vppconn.WithDialTimeout(time.Second))
	require.Less(t, time.Since(start), 3*time.Second)
	require.ErrorContains(t, err, "VPP API socket "+socket+" exists but VPP did not answer within 1s")
}

func TestCancellingAbandonsConnecting(t *testing.T) {
	socket := silentSocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)

	start := time.Now()
	_, err := vppconn.Connect(ctx, socket, vppconn.WithDialTimeout(time.Minute))
	require.Less(t, time.Since(start), 2*time.Second)
	require.ErrorIs(t, err, context.Canceled)
}

func TestAFileThatIsNoSocketIsNotVPP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(path, nil, 0o600))

	_, err := vppconn.Connect(context.Background(), path, vppconn.WithDialTimeout(500*time.Millisecond))
	require.ErrorContains(t, err, path)
}

// fakeVPP puts an executable named vpp, running script, first on PATH.
func fakeVPP(t *testing.T, script string) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vpp"), []byte("#!/bin/sh\n"+script+"\n"), 0o700))
	t.Setenv("PATH", dir+":/usr/bin:/bin")
}

func TestStartedVPPThatCrashesFailsAtOnce(t *testing.T) {
	fakeVPP(t, "echo 'vpp: cannot map hugepages' >&2; exit 1")
	rootDir := t.TempDir()

	start := time.Now()
	_, err := vppconn.Connect(context.Background(), filepath.Join(rootDir, "absent.sock"), vppconn.WithRootDir(rootDir))
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorContains(t, err, "vpp")
	require.ErrorContains(t, err, "exit status 1")
	require.FileExists(t, filepath.Join(rootDir, "etc", "vpp", "helper", "vpp.conf"), "vpphelper wrote its configuration under the root dir")
}

func TestStartedVPPThatNeverAnswersFailsWithinTheStartTimeout(t *testing.T) {
	fakeVPP(t, "exec sleep 60")
	rootDir := t.TempDir()
	lifetime, stopVPP := context.WithCancel(context.Background())
	defer stopVPP()

	start := time.Now()
	_, err := vppconn.Connect(context.Background(), filepath.Join(rootDir, "absent.sock"),
		vppconn.WithRootDir(rootDir), vppconn.WithStartTimeout(time.Second), vppconn.WithLifetime(lifetime))
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorContains(t, err, "did not answer on "+filepath.Join(rootDir, "var/run/vpp/api.sock")+" within 1s")
}
