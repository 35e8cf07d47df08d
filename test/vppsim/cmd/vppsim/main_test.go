package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// The test binary doubles as the vppsim command when asked to, so the crash test can
// kill a real simulator process without building one.
func TestMain(m *testing.M) {
	if os.Getenv("VPPSIM_TEST_AS_COMMAND") == "1" {
		os.Exit(serve(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestHelpExitsZero(t *testing.T) {
	var stderr bytes.Buffer
	require.Equal(t, 0, serve([]string{"-h"}, &stderr))
	require.Contains(t, stderr.String(), "-api-socket")
}

func TestShowPrintsState(t *testing.T) {
	dir := t.TempDir()
	stateSocket := filepath.Join(dir, "state.sock")
	sim, err := vppsim.Start(context.Background(), vppsim.Config{APISocket: filepath.Join(dir, "api.sock"), StateSocket: stateSocket})
	require.NoError(t, err)
	defer func() { _ = sim.Close() }()

	var out, errOut bytes.Buffer
	require.Equal(t, 0, show([]string{"--json", "--state-socket", stateSocket}, &out, &errOut), errOut.String())
	var snap vppsim.Snapshot
	require.NoError(t, json.Unmarshal(out.Bytes(), &snap))
	require.Equal(t, "local0", snap.State.Interfaces[0].Name)

	out.Reset()
	require.Equal(t, 0, show([]string{"--state-socket", stateSocket}, &out, &errOut))
	require.Contains(t, out.String(), "local0")

	require.Equal(t, 1, show([]string{"--state-socket", filepath.Join(dir, "nothing.sock")}, &out, &errOut))
}

// TestKillLosesStateAndTaps is the restart contract: SIGKILL takes the taps with it, and
// a new process on the same socket is an empty VPP.
func TestKillLosesStateAndTaps(t *testing.T) {
	ns := vppsimtest.NewNetns(t, "vsim")
	dir := t.TempDir()
	apiSocket := filepath.Join(dir, "api.sock")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "--api-socket", apiSocket, "--log-level", "warn")
		cmd.Env = append(os.Environ(), "VPPSIM_TEST_AS_COMMAND=1")
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		require.Eventually(t, func() bool {
			_, err := vppsim.ReadState(filepath.Join(dir, "vppsim-state.sock"))
			return err == nil
		}, 10*time.Second, 50*time.Millisecond)
		return cmd
	}
	first := start()
	conn, err := govpp.Connect(apiSocket)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, HostIfNameSet: true, HostIfName: "nsm-kill", HostNamespaceSet: true, HostNamespace: ns.Name,
	})
	require.NoError(t, err)
	conn.Disconnect()
	require.NoError(t, ns.Do(func() error { _, err := netlink.LinkByName("nsm-kill"); return err }))

	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	require.Error(t, ns.Do(func() error { _, err := netlink.LinkByName("nsm-kill"); return err }), "the tap dies with the process")

	start()
	snap, err := vppsim.ReadState(filepath.Join(dir, "vppsim-state.sock"))
	require.NoError(t, err)
	require.Len(t, snap.State.Interfaces, 1, "a restarted simulator is an empty VPP")
	var names []string
	for _, i := range snap.State.SortedInterfaces() {
		names = append(names, i.Name)
	}
	require.Equal(t, "local0", strings.Join(names, ","))
}
