package vppsimtest

import (
	"context"
	"path/filepath"
	"testing"

	"go.fd.io/govpp"
	"go.fd.io/govpp/core"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
)

// StartSim runs an in-process simulator on a temporary API socket (with its state and
// stats sockets beside it: state.sock, stats.sock) until the test ends. It records
// requests, so sim.Requests() and vppsim.RequestsOf[T](sim) show what a client sent. netns is where its af_packet and VXLAN sockets live:
// a namespace name or path, or "" for the test process's own.
func StartSim(t testing.TB, netns string) *vppsim.Sim {
	t.Helper()
	dir := t.TempDir()
	sim, err := vppsim.Start(context.Background(), vppsim.Config{
		APISocket:      filepath.Join(dir, "api.sock"),
		StateSocket:    filepath.Join(dir, "state.sock"),
		StatsSocket:    filepath.Join(dir, "stats.sock"),
		Netns:          netns,
		RecordRequests: true,
	})
	if err != nil {
		t.Fatalf("starting vppsim: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// Dial connects a plain govpp client to sim, as the forwarder connects to VPP, and
// disconnects it when the test ends. The result is an api.Connection for sdk-vpp elements.
func Dial(t testing.TB, sim *vppsim.Sim) *core.Connection {
	t.Helper()
	conn, err := govpp.Connect(sim.APISocket())
	if err != nil {
		t.Fatalf("connecting to vppsim at %s: %v", sim.APISocket(), err)
	}
	t.Cleanup(conn.Disconnect)
	return conn
}
