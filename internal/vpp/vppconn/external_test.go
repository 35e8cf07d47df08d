package vppconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// An existing API socket is an external VPP: the connection speaks VPP's protocol to it, finds
// its stats segment beside the API socket, and Close lets go of it.
func TestExternalVPPAnswersAndHasItsStatsBesideTheAPISocket(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	conn, err := vppconn.Connect(ctx, sim.APISocket())
	require.NoError(t, err)
	require.True(t, conn.External)
	require.Nil(t, conn.Exited, "nothing of the forwarder's own to watch")
	version, err := vpe.NewServiceClient(conn).ShowVersion(ctx, &vpe.ShowVersion{})
	require.NoError(t, err)
	require.Contains(t, version.Version, "vppsim")

	require.Equal(t, sim.StatsSocket(), conn.StatsSocket())
	stats, err := core.ConnectStats(statsclient.NewStatsClient(conn.StatsSocket()))
	require.NoError(t, err)
	defer stats.Disconnect()
	interfaces := new(api.InterfaceStats)
	require.NoError(t, stats.GetInterfaceStats(interfaces))
	require.NotEmpty(t, interfaces.Interfaces)
	require.Equal(t, "local0", interfaces.Interfaces[0].InterfaceName)

	require.Len(t, sim.Snapshot().Clients, 1)
	conn.Close()
	require.Eventually(t, func() bool { return len(sim.Snapshot().Clients) == 0 }, 5*time.Second, 20*time.Millisecond,
		"Close releases the API connection")
}

// A VPP that goes away takes the API connection with it, and govpp says nothing: Lost does, so
// the forwarder does not sit alive with a dead connection.
func TestExternalVPPThatGoesAwayIsReportedLost(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := vppconn.Connect(ctx, sim.APISocket())
	require.NoError(t, err)
	defer conn.Close()

	require.NoError(t, sim.Close())
	select {
	case err := <-conn.Lost:
		require.Error(t, err)
	case <-ctx.Done():
		t.Fatal("the broken API connection was not reported")
	}
}

// Close is no loss: it ends the watching without a report.
func TestCloseIsNoLoss(t *testing.T) {
	sim := vppsimtest.StartSim(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := vppconn.Connect(ctx, sim.APISocket())
	require.NoError(t, err)
	conn.Close()
	err, reported := <-conn.Lost
	require.False(t, reported, "got %v", err)
}
