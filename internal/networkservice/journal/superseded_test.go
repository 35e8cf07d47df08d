package journal_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// makesInterface stands for sdk-vpp: it leaves the client's side's VPP interface in the metadata.
type makesInterface struct {
	index interface_types.InterfaceIndex
}

func (m *makesInterface) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	ifindex.Store(ctx, false, m.index)
	return request.GetConnection(), nil
}

func (m *makesInterface) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return &empty.Empty{}, nil
}

// recordingCleanup keeps the records it was asked to release and fails while failing is set.
type recordingCleanup struct {
	mu      sync.Mutex
	records []*journal.Record
	failing bool
}

func (c *recordingCleanup) cleanup(_ context.Context, rec *journal.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, rec.Clone())
	if c.failing {
		return errors.New("VPP could not be read")
	}
	return nil
}

// A Request builds the client's side anew while the old side's VPP interface still exists (its
// metadata was lost: a failure above the journal after the commit, as a refused descriptor reply
// is). The commit names the new interface only; the old one must stay recorded until it is
// released, and only it is released: not the connection's own kernel state, which is live.
func TestAnInterfaceACommitNoLongerNamesIsReleased(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	j := open(t, dir)
	cleanup := &recordingCleanup{failing: true}
	made := &makesInterface{index: 5}
	server := next.NewNetworkServiceServer(metadata.NewServer(), journal.NewServer(ctx, j, cleanup.cleanup), made)
	request := func() *networkservice.Connection {
		conn, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "", "inode://4/4026532000")})
		require.NoError(t, err)
		return conn
	}

	request()
	require.Empty(t, cleanup.records, "nothing was superseded yet")
	made.index = 9
	conn := request()
	require.Len(t, cleanup.records, 1)
	released := cleanup.records[0]
	require.Nil(t, released.Committed, "the release was handed the live state")
	require.Nil(t, released.Intent)
	require.Len(t, released.Superseded, 1)
	require.Equal(t, uint32(5), released.Superseded[0].Interfaces[0].SwIfIndex)

	records, err := journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, records, 1)
	require.Equal(t, uint32(9), records[0].Committed.Interfaces[0].SwIfIndex)
	require.Len(t, records[0].Superseded, 1, "a superseded interface whose release failed is no longer on disk")

	cleanup.failing = false
	_, err = server.Close(ctx, conn)
	require.NoError(t, err)
	require.Len(t, cleanup.records, 2, "the Close did not release the superseded interface first")
	require.Equal(t, uint32(5), cleanup.records[1].Superseded[0].Interfaces[0].SwIfIndex)
	require.Empty(t, recordFiles(t, dir))
}
