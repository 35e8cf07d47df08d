package journal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// A restarted forwarder whose VPP restarted too gives the rebuilt interfaces the dead run's VPP
// indexes: the record read from disk must not stand in for what the rebuild made, so the first
// commit of this run looks the pod's links up again. Only what this run committed is reused.
func TestARecordFromThePreviousRunIsNoCacheForTheNextCommit(t *testing.T) {
	dir := t.TempDir()
	conn := &networkservice.Connection{Id: "conn-1"}
	previous, err := Open(context.Background(), dir)
	require.NoError(t, err)
	require.NoError(t, previous.Begin("conn-1", conn))
	recorded := []Interface{{Tag: "conn-1", SwIfIndex: 3, Link: &Link{Name: "nsm-1", Index: 23, MAC: "8e:f8:ea:80:1a:9d"}}}
	require.NoError(t, previous.Commit("conn-1", conn, nil, recorded))
	require.Equal(t, recorded, previous.committed("conn-1").Interfaces, "what this run committed is its cache")
	require.NoError(t, previous.Close())

	restarted, err := Open(context.Background(), dir)
	require.NoError(t, err)
	defer func() { _ = restarted.Close() }()
	require.NotNil(t, restarted.Lookup("conn-1").Committed, "the record is read back")
	require.Nil(t, restarted.committed("conn-1"), "the previous run's commit stood in for the rebuild's interfaces")

	require.NoError(t, restarted.Begin("conn-1", conn))
	rebuilt := []Interface{{Tag: "conn-1", SwIfIndex: 3, Link: &Link{Name: "nsm-1", Index: 27, MAC: "f6:1f:7c:e4:3e:0c"}}}
	require.NoError(t, restarted.Commit("conn-1", conn, nil, rebuilt))
	require.Equal(t, rebuilt, restarted.committed("conn-1").Interfaces)
}
