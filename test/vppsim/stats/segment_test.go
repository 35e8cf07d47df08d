package stats

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/adapter/statsclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

func TestGovppReadsPublishedCounters(t *testing.T) {
	seg, err := NewSegment(64)
	require.NoError(t, err)
	defer func() { _ = seg.Close() }()
	path := filepath.Join(t.TempDir(), "stats.sock")
	srv, err := Serve(path, seg)
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()

	require.NoError(t, seg.Publish([]Interface{
		{Name: "local0"},
		{Name: "tap0", Counters: Counters{RxPackets: 3, RxBytes: 300, TxPackets: 2, TxBytes: 200, Drops: 1}},
	}))

	conn, err := core.ConnectStats(statsclient.NewStatsClient(path))
	require.NoError(t, err)
	defer conn.Disconnect()

	stats := &api.InterfaceStats{}
	require.NoError(t, conn.GetInterfaceStats(stats))
	require.Len(t, stats.Interfaces, 2)
	tap := stats.Interfaces[1]
	require.Equal(t, "tap0", tap.InterfaceName)
	require.Equal(t, uint64(3), tap.Rx.Packets)
	require.Equal(t, uint64(300), tap.Rx.Bytes)
	require.Equal(t, uint64(2), tap.Tx.Packets)
	require.Equal(t, uint64(1), tap.Drops)

	// A new publish (a new epoch) is picked up by the same connection.
	require.NoError(t, seg.Publish([]Interface{{Name: "local0"}, {Name: "tap0", Counters: Counters{RxPackets: 9}}, {Name: "tap1"}}))
	require.NoError(t, conn.GetInterfaceStats(stats))
	require.Len(t, stats.Interfaces, 3)
	require.Equal(t, uint64(9), stats.Interfaces[1].Rx.Packets)
	require.Equal(t, "tap1", stats.Interfaces[2].InterfaceName)
}

func TestPublishRefusesWhatDoesNotFit(t *testing.T) {
	seg, err := NewSegment(1)
	require.NoError(t, err)
	defer func() { _ = seg.Close() }()
	many := make([]Interface, 10000)
	require.ErrorIs(t, seg.Publish(many), errFull)
}
