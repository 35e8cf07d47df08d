package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/memif"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// sdk-vpp's memif mechanism adds a memif socket for each connection and deletes it with the
// interface on a Close it sees. The release of a previous run's memif interface takes its socket
// too, once no memif is on it; a socket another agent's memif is on stays, and so do VPP's
// default socket 0 and another agent's sockets.
func TestARecordedMemifIsReleasedWithItsSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	foreignSocket := v.memifSocket(ctx, t, "/run/other/agent.sock")
	v.memif(ctx, t, foreignSocket, 0, "other-agent")
	shared := v.memifSocket(ctx, t, "/run/shared.sock")
	v.memif(ctx, t, shared, 0, "other-agent-2")
	foreignInterfaces := v.interfaces()

	own := v.memifSocket(ctx, t, "@/tmp/memif/conn-1/memif.socket")
	onOwn := v.memif(ctx, t, own, 0, "conn-1")
	onShared := v.memif(ctx, t, shared, 1, "conn-2")

	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	for id, index := range map[string]interface_types.InterfaceIndex{"conn-1": onOwn, "conn-2": onShared} {
		incoming := v.client.connection(id, "memif0", 1)
		incoming.Mechanism = &networkservice.Mechanism{Cls: cls.LOCAL, Type: memifmech.MECHANISM, Parameters: map[string]string{}}
		require.NoError(t, j.Begin(id, incoming))
		require.NoError(t, j.Commit(id, incoming, nil, []journal.Interface{{Tag: id, SwIfIndex: uint32(index)}}))
	}

	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseAll(ctx))
	require.Equal(t, foreignInterfaces, v.interfaces(), "a recorded memif stayed, or another agent's went")
	sockets := v.sim.State().MemifSockets
	require.NotContains(t, sockets, own, "the released memif's socket stayed")
	require.Contains(t, sockets, shared, "a socket another agent's memif is on went")
	require.Contains(t, sockets, foreignSocket)
	require.Contains(t, sockets, uint32(0), "VPP's default socket went")
}

func (v *sharedVPP) memifSocket(ctx context.Context, t *testing.T, filename string) uint32 {
	t.Helper()
	reply, err := memif.NewServiceClient(v.conn).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: filename})
	require.NoError(t, err)
	return reply.SocketID
}

func (v *sharedVPP) memif(ctx context.Context, t *testing.T, socketID, id uint32, tag string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := memif.NewServiceClient(v.conn).MemifCreate(ctx, &memif.MemifCreate{Role: memif.MEMIF_ROLE_API_MASTER, Mode: memif.MEMIF_MODE_API_ETHERNET, SocketID: socketID, ID: id})
	require.NoError(t, err)
	v.tag(ctx, t, reply.SwIfIndex, tag)
	return reply.SwIfIndex
}
