package vppsim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// TestStatsCountForwardedTraffic: the counters govpp's stats client reads are the
// packets that really crossed the simulator.
func TestStatsCountForwardedTraffic(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)
	left := vppsimtest.NewNetns(t, nsPrefix)
	right := vppsimtest.NewNetns(t, nsPrefix)
	tapL := createTap(ctx, t, conn, left, "nsm-l")
	tapR := createTap(ctx, t, conn, right, "nsm-r")
	left.AddrAdd(t, "nsm-l", "10.61.0.1/24")
	right.AddrAdd(t, "nsm-r", "10.61.0.2/24")
	xconnect(ctx, t, conn, tapL, tapR, true)
	xconnect(ctx, t, conn, tapR, tapL, true)
	require.NoError(t, vppsimtest.Ping(left, mustAddr(t, "10.61.0.1"), mustAddr(t, "10.61.0.2"), 5*time.Second))

	statsConn, err := core.ConnectStats(statsclient.NewStatsClient(sim.StatsSocket()))
	require.NoError(t, err)
	defer statsConn.Disconnect()
	stats := &api.InterfaceStats{}
	require.Eventually(t, func() bool {
		if err := statsConn.GetInterfaceStats(stats); err != nil || len(stats.Interfaces) <= int(tapR) {
			return false
		}
		return stats.Interfaces[tapR].Tx.Packets > 0 && stats.Interfaces[tapL].Rx.Packets > 0
	}, 5*time.Second, 100*time.Millisecond, "the ping must show up in rx of the left tap and tx of the right one")
	require.Equal(t, "tap0", stats.Interfaces[tapL].InterfaceName)
	require.Equal(t, "tap1", stats.Interfaces[tapR].InterfaceName)
}
