package vppsim_test

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/lldp"
	"github.com/networkservicemesh/govpp/binapi/memclnt"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

const nsPrefix = "vsim"

func startSim(t *testing.T, netns string) *vppsim.Sim { return vppsimtest.StartSim(t, netns) }

func connect(t *testing.T, sim *vppsim.Sim) *core.Connection { return vppsimtest.Dial(t, sim) }

func startSimB(b *testing.B) *vppsim.Sim { return vppsimtest.StartSim(b, "") }

func connectB(b *testing.B, sim *vppsim.Sim) *core.Connection { return vppsimtest.Dial(b, sim) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHandshakePingAndVersion(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)

	reply, err := memclnt.NewServiceClient(conn).ControlPing(ctx, &memclnt.ControlPing{})
	require.NoError(t, err)
	require.Equal(t, uint32(os.Getpid()), reply.VpePID)

	version, err := vpe.NewServiceClient(conn).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err)
	require.Equal(t, "vpe", version.Program)
	require.Len(t, vppsim.RequestsOf[*vpe.ShowVersion](sim), 1, "requests are recorded for tests")

	// local0 exists from the start, as in VPP.
	dump, err := interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	d, err := dump.Recv()
	require.NoError(t, err)
	require.Equal(t, "local0", d.InterfaceName)
	_, err = dump.Recv()
	require.ErrorIs(t, err, io.EOF)
}

func TestSeveralClientsAtOnce(t *testing.T) {
	sim := startSim(t, "")
	ctx := ctxFor(t)
	conns := []*core.Connection{connect(t, sim), connect(t, sim), connect(t, sim)}
	done := make(chan error, len(conns)*20)
	for _, c := range conns {
		for n := 0; n < 20; n++ {
			go func(c *core.Connection) {
				_, err := memclnt.NewServiceClient(c).ControlPing(ctx, &memclnt.ControlPing{})
				done <- err
			}(c)
		}
	}
	for n := 0; n < len(conns)*20; n++ {
		require.NoError(t, <-done)
	}
	snap := sim.Snapshot()
	require.Len(t, snap.Clients, len(conns))
}

func TestUnimplementedMessageGetsRetval(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	// lldp_config is in the table but the simulator does not do it.
	_, err := lldp.NewServiceClient(conn).LldpConfig(ctx, &lldp.LldpConfig{TxHold: 4, TxInterval: 30})
	var apiErr api.VPPApiError
	require.True(t, errors.As(err, &apiErr), "want a VPPApiError, got %v", err)
	require.Equal(t, api.UNIMPLEMENTED, apiErr)
}

func TestDeletingWhatDoesNotExistFails(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)

	_, err := tapv2.NewServiceClient(conn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: 42})
	requireAPIError(t, err, api.INVALID_SW_IF_INDEX)
	_, err = af_packet.NewServiceClient(conn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: "nope"})
	requireAPIError(t, err, api.SYSCALL_ERROR_1)
	_, err = interfaces.NewServiceClient(conn).SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: 0,
		Prefix:    mustPrefix(t, "10.1.1.1/24"),
	})
	requireAPIError(t, err, api.ADDRESS_NOT_FOUND_FOR_INTERFACE)
	_, err = l2.NewServiceClient(conn).SwInterfaceSetL2Xconnect(ctx, &l2.SwInterfaceSetL2Xconnect{RxSwIfIndex: 7, TxSwIfIndex: 0, Enable: true})
	requireAPIError(t, err, api.INVALID_SW_IF_INDEX)
}

func requireAPIError(t *testing.T, err error, want api.VPPApiError) {
	t.Helper()
	var apiErr api.VPPApiError
	require.True(t, errors.As(err, &apiErr), "want %v, got %v", want, err)
	require.Equal(t, want, apiErr)
}

func mustPrefix(t *testing.T, s string) ip_types.AddressWithPrefix {
	t.Helper()
	p, err := ip_types.ParseAddressWithPrefix(s)
	require.NoError(t, err)
	return p
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	require.NoError(t, err)
	return a
}

func startSimAt(t *testing.T, apiSocket, netns string) *vppsim.Sim {
	t.Helper()
	sim, err := vppsim.Start(context.Background(), vppsim.Config{APISocket: apiSocket, Netns: netns})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// TestConcurrentClientsKeepStateConsistent: clients creating and deleting interfaces at
// the same time each get unique indexes and the end state holds exactly what survived.
func TestConcurrentClientsKeepStateConsistent(t *testing.T) {
	sim := startSim(t, "")
	ctx := ctxFor(t)
	const clients, perClient = 4, 25
	type result struct {
		kept []interface_types.InterfaceIndex
		err  error
	}
	results := make(chan result, clients)
	for c := 0; c < clients; c++ {
		conn := connect(t, sim)
		go func() {
			ifc := interfaces.NewServiceClient(conn)
			var r result
			for n := 0; n < perClient; n++ {
				reply, err := ifc.CreateLoopback(ctx, &interfaces.CreateLoopback{})
				if err != nil {
					r.err = err
					break
				}
				if n%2 == 0 {
					r.kept = append(r.kept, reply.SwIfIndex)
					continue
				}
				if _, err := ifc.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: reply.SwIfIndex}); err != nil {
					r.err = err
					break
				}
			}
			results <- r
		}()
	}
	seen := map[interface_types.InterfaceIndex]bool{}
	for c := 0; c < clients; c++ {
		r := <-results
		require.NoError(t, r.err)
		for _, idx := range r.kept {
			require.False(t, seen[idx], "sw_if_index %d handed out twice", idx)
			seen[idx] = true
		}
	}
	st := sim.State()
	require.Len(t, st.Interfaces, 1+len(seen))
	for idx := range seen {
		require.Contains(t, st.Interfaces, uint32(idx))
	}
}

// TestSwIfIndexReuse: like VPP's pool, the index freed last is handed out next, which is
// why owners must be found by tag rather than by a remembered index.
func TestSwIfIndexReuse(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	ifc := interfaces.NewServiceClient(conn)
	var created []interface_types.InterfaceIndex
	for n := 0; n < 3; n++ {
		reply, err := ifc.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		require.NoError(t, err)
		created = append(created, reply.SwIfIndex)
	}
	for _, idx := range []interface_types.InterfaceIndex{created[0], created[1]} {
		_, err := ifc.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: idx})
		require.NoError(t, err)
	}
	again, err := ifc.CreateLoopback(ctx, &interfaces.CreateLoopback{})
	require.NoError(t, err)
	require.Equal(t, created[1], again.SwIfIndex)
}
