package command_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fcmd-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "forwarder-vpp")
	if out, err := exec.Command("go", "build", "-o", binary, "../..").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// command runs the binary with only the given variables (and a PATH without vpp) in its environment.
func command(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.Command(binary)
	cmd.Env = append([]string{"PATH=" + t.TempDir()}, env...)
	return cmd
}

func TestHelpListsEveryVariable(t *testing.T) {
	cmd := command(t)
	cmd.Args = append(cmd.Args, "-h")
	out, err := cmd.Output()
	require.NoError(t, err, "-h exits 0")
	for _, variable := range append(config.Variables(), "NSM_KERNEL_INTERFACE_TYPE", "NSM_VPP_INIT_PARAMS", "NSM_DEVICE_SELECTOR_FILE") {
		require.Contains(t, string(out), "\n"+variable+" ", "%s missing from -h", variable)
	}
}

func TestBadVariableFailsAtOnceWithOneLine(t *testing.T) {
	cmd := command(t, "NSM_VPP_INIT=bogus")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	require.Error(t, err)
	require.NotZero(t, cmd.ProcessState.ExitCode())
	require.Less(t, time.Since(start), 2*time.Second)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Len(t, lines, 1, "stderr: %q", stderr.String())
	require.Contains(t, lines[0], "NSM_VPP_INIT")
	require.Contains(t, lines[0], "bogus")
}

func TestUnexpectedArgumentIsUsageError(t *testing.T) {
	cmd := command(t)
	cmd.Args = append(cmd.Args, "--tunnel-ip=1.2.3.4")
	require.Error(t, cmd.Run())
	require.Equal(t, 2, cmd.ProcessState.ExitCode())
}

func TestNoVPPSocketAndNoVPPBinaryExitsWithinSeconds(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "vpp-api.sock")
	cmd := command(t, "NSM_VPP_API_SOCKET="+socket)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.NotZero(t, cmd.ProcessState.ExitCode())
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, string(out), socket)
	require.Contains(t, string(out), `no "vpp" binary`)
}

// A socket that accepts but never answers must not hang the forwarder: SIGTERM ends it cleanly.
func TestSigtermDuringVPPConnectExitsZero(t *testing.T) {
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

	cmd := command(t, "NSM_VPP_API_SOCKET="+socket)
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return strings.Contains(output.String(), "connect to VPP") }, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "output: %s", output.String())
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 5s after SIGTERM: %s", output.String())
	}
}

func TestConfigurationDocumentListsEveryVariable(t *testing.T) {
	document, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, variable := range config.Variables() {
		require.Contains(t, string(document), "| `"+variable+"` |", "%s missing from the README's configuration table", variable)
	}
}

// The release build stamps the version (make image: -ldflags "-X main.version=..."); -version
// prints it, so an image can be asked what it is.
func TestVersionPrintsTheStampedVersion(t *testing.T) {
	cmd := command(t)
	cmd.Args = append(cmd.Args, "-version")
	out, err := cmd.Output()
	require.NoError(t, err)
	require.Equal(t, "dev\n", string(out), "an unstamped build says so")

	stamped := filepath.Join(t.TempDir(), "forwarder-vpp")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", stamped, "../..")
	buildOut, err := build.CombinedOutput()
	require.NoError(t, err, "%s", buildOut)
	out, err = exec.Command(stamped, "-version").Output()
	require.NoError(t, err)
	require.Equal(t, "v9.8.7-test\n", string(out))
}

// -liveness is the DaemonSet's liveness probe: it exits non-zero, saying why, when nothing
// serves on the URL (internal/startup/liveness tests what counts as serving).
func TestLivenessFlagFailsWithoutAServer(t *testing.T) {
	cmd := command(t)
	socket := filepath.Join(t.TempDir(), "listen.on.sock")
	cmd.Args = append(cmd.Args, "-liveness=unix://"+socket)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.Error(t, cmd.Run())
	require.Equal(t, 1, cmd.ProcessState.ExitCode())
	require.Contains(t, stderr.String(), "not alive")
	require.Contains(t, stderr.String(), socket)
}

// As the stock forwarder: SIGUSR1 turns TRACE on and SIGUSR2 restores the configured level, at run
// time (and the signals' default action, which would end the process, is off).
func TestSigusrSwitchesTheLogLevel(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "vpp-api.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := listener.Accept(); err == nil {
			accepted <- conn
		}
	}()

	cmd := command(t, "NSM_VPP_API_SOCKET="+socket, "NSM_LOG_LEVEL=WARN")
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case conn := <-accepted: // the logger is set up: the process waits for VPP's answer
		t.Cleanup(func() { _ = conn.Close() })
	case <-time.After(5 * time.Second):
		t.Fatalf("never dialled VPP: %s", output.String())
	}

	// The sdk logs each switch at INFO, which WARN hides: the second line shows only because
	// SIGUSR1 really switched to TRACE.
	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR1))
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGUSR2))
	require.Eventually(t, func() bool { return strings.Contains(output.String(), "Setting log level to 'warning'") }, 5*time.Second, 20*time.Millisecond, output.String())
	require.NotContains(t, output.String(), "Setting log level to 'trace'", "logged at INFO while the level was WARN")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), output.String())
}
