package vpptest

import (
	"testing"

	"go.fd.io/govpp"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// Backend names a VPP implementation.
type Backend string

// The two backends; their names are the subtest names Each gives.
const (
	Sim  Backend = "vppsim"
	Real Backend = "vpp"
)

// Backends are both, simulator first.
var Backends = []Backend{Sim, Real}

// Each runs f once per backend, as subtests named after it (`go test -run 'X/vpp$'` picks the
// real one). On a machine without VPP the real subtest skips, saying where it looked.
func Each(t *testing.T, f func(t *testing.T, backend Backend)) {
	t.Helper()
	for _, backend := range Backends {
		t.Run(string(backend), func(t *testing.T) { f(t, backend) })
	}
}

// VPP is a running VPP of either backend and a recorded API connection to it.
type VPP struct {
	*Conn
	Backend Backend
	// Sim is the simulator (nil on real VPP), for what only it can show.
	Sim *vppsim.Sim
	// Real is the real VPP (nil on the simulator).
	Real     *realvpp.VPP
	recorder *recorder
}

// Start runs a VPP of backend in netns, or in the test process's namespace when netns is nil (as
// VPP shares the forwarder's pod: the veth mechanism needs that), until the test ends.
func Start(t testing.TB, backend Backend, netns *vppsimtest.Netns) *VPP {
	t.Helper()
	v := &VPP{Backend: backend, recorder: &recorder{}}
	switch backend {
	case Sim:
		name := ""
		if netns != nil {
			name = netns.Name
		}
		v.Sim = vppsimtest.StartSim(t, name)
	case Real:
		options := realvpp.Options{InCallerNetns: netns == nil}
		if netns != nil {
			options.Netns = netns.Name
		}
		v.Real = realvpp.StartForTest(t, options)
	default:
		t.Fatalf("unknown VPP backend %q", backend)
	}
	v.Conn = v.Dial(t)
	return v
}

// APISocket is VPP's binary API socket.
func (v *VPP) APISocket() string {
	if v.Sim != nil {
		return v.Sim.APISocket()
	}
	return v.Real.APISocket()
}

// StatsSocket is VPP's stats segment socket.
func (v *VPP) StatsSocket() string {
	if v.Sim != nil {
		return v.Sim.StatsSocket()
	}
	return v.Real.StatsSocket()
}

// Dial opens another API connection, as another client (or another run of the forwarder)
// does; what it sends is recorded with the rest. It is disconnected when the test ends.
func (v *VPP) Dial(t testing.TB) *Conn {
	t.Helper()
	conn, err := govpp.Connect(v.APISocket())
	if err != nil {
		t.Fatalf("connecting to %s at %s: %v", v.Backend, v.APISocket(), err)
	}
	t.Cleanup(conn.Disconnect)
	return &Conn{Connection: conn, recorder: v.recorder}
}

// Requests lists what clients sent over this VPP's recorded connections, in order, without the
// transport's control_ping.
func (v *VPP) Requests() []api.Message { return v.recorder.list() }

// RequestsOf lists the recorded requests of type T, in order.
func RequestsOf[T api.Message](v *VPP) []T {
	var matching []T
	for _, msg := range v.Requests() {
		if typed, ok := msg.(T); ok {
			matching = append(matching, typed)
		}
	}
	return matching
}

// Names lists the recorded requests by message name, in order.
func (v *VPP) Names() []string {
	var names []string
	for _, msg := range v.Requests() {
		names = append(names, msg.GetMessageName())
	}
	return names
}
