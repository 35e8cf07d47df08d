package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

func start(t *testing.T, script string) *process.Process {
	t.Helper()
	p, err := process.Start(process.Spec{
		Name:    "sh",
		Binary:  "/bin/sh",
		Args:    []string{"-c", script},
		LogPath: filepath.Join(t.TempDir(), "sh.log"),
	})
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	return p
}

func TestStopTreatsDeathBySIGTERMAsClean(t *testing.T) {
	p := start(t, "echo started; exec sleep 60")
	require.Eventually(t, func() bool { return strings.Contains(p.LogTail(1), "started") }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, p.Stop(5*time.Second))
	exited, _ := p.Exited()
	require.True(t, exited)
}

func TestStopReportsAFailedShutdown(t *testing.T) {
	p := start(t, "trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done")
	require.Eventually(t, func() bool { return strings.Contains(p.LogTail(1), "ready") }, 5*time.Second, 10*time.Millisecond)
	err := p.Stop(5 * time.Second)
	require.ErrorContains(t, err, "exit status 3")
}

func TestKillAfterAFailedExitDisownsIt(t *testing.T) {
	p := start(t, "exit 1")
	require.Eventually(t, func() bool { exited, _ := p.Exited(); return exited }, 5*time.Second, 10*time.Millisecond)
	p.Kill()
	require.NoError(t, p.Stop(time.Second), "the caller already took the failed exit and ended the process itself")
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	p := start(t, "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	require.Eventually(t, func() bool { return strings.Contains(p.LogTail(1), "ready") }, 5*time.Second, 10*time.Millisecond)
	err := p.Stop(300 * time.Millisecond)
	require.ErrorContains(t, err, "did not exit within")
	exited, _ := p.Exited()
	require.True(t, exited)
}

func TestTailReturnsTheLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o600))
	require.Equal(t, "two\nthree", process.Tail(path, 2))
	require.Equal(t, "one\ntwo\nthree", process.Tail(path, 10))
	require.Contains(t, process.Tail(filepath.Join(t.TempDir(), "missing"), 3), "no log")
}

func TestKilledProcessStopsCleanlyAndRespawnsWithTheSameSpec(t *testing.T) {
	p := start(t, "echo started; exec sleep 60")
	require.Eventually(t, func() bool { return strings.Contains(p.LogTail(1), "started") }, 5*time.Second, 10*time.Millisecond)
	_, err := p.Respawn()
	require.ErrorContains(t, err, "still running")
	p.Kill()
	require.NoError(t, p.Stop(time.Second), "a death by the harness's own SIGKILL is not a failed shutdown")

	again, err := p.Respawn()
	require.NoError(t, err)
	t.Cleanup(again.Kill)
	require.Eventually(t, func() bool { return len(strings.Split(process.Tail(p.LogPath(), 10), "\n")) == 3 }, 5*time.Second, 10*time.Millisecond)
	lines := strings.Split(process.Tail(p.LogPath(), 10), "\n")
	require.Equal(t, "started", lines[0])
	require.Contains(t, lines[1], "==== e2e harness: sh restarted at")
	require.Equal(t, "started", lines[2], "the same program ran again, appending to the same log")
	exited, _ := again.Exited()
	require.False(t, exited)
}
