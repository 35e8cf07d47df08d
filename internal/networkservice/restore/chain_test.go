package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// chainPath is the path of a local chain through one forwarder (nsc, nsmgr, forwarder, nsmgr,
// pass-through endpoint, nsmgr, forwarder, nsmgr, final endpoint), as the forwarder sees it for
// hop 1 (index 2) or hop 2 (index 6): hop 2's path holds every segment of hop 1's.
func chainPath(hop int, forwarderName string) *networkservice.Path {
	segments := []*networkservice.PathSegment{
		{Id: "nsc-1", Name: "nsc"}, {Id: "nsmgr-in-1", Name: "nsmgr"}, {Id: "hop1-fwd", Name: forwarderName},
		{Id: "nsmgr-out-1", Name: "nsmgr"}, {Id: "passthrough-1", Name: "passthrough"},
	}
	if hop == 1 {
		return &networkservice.Path{Index: 2, PathSegments: segments}
	}
	segments = append(segments,
		&networkservice.PathSegment{Id: "nsmgr-in-2", Name: "nsmgr"}, &networkservice.PathSegment{Id: "hop2-fwd", Name: forwarderName},
		&networkservice.PathSegment{Id: "nsmgr-out-2", Name: "nsmgr"}, &networkservice.PathSegment{Id: "final-1", Name: "final"})
	return &networkservice.Path{Index: 6, PathSegments: segments}
}

// chainHop is hop 1 or hop 2's connection as the forwarder sees it, its kernel interface in c.
func chainHop(c *clientNetns, hop int, forwarderName string) *networkservice.Connection {
	conn := c.connection("hop1-fwd", "nsm-a", 1)
	if hop == 2 {
		conn = c.connection("hop2-fwd", "nsm-b", 2)
	}
	conn.Path = chainPath(hop, forwarderName)
	conn.Id = conn.GetPath().GetPathSegments()[conn.GetPath().GetIndex()].GetId()
	return conn
}

// After a restart, each hop of a local chain is claimed by its own Request only, although hop 2's
// path names every ID of hop 1's: both come back, adopted, and neither record is lost.
func TestEachHopOfALocalChainClaimsItsOwnLeftover(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, chainHop(client, 1, "forwarder"))
	first.request(t, chainHop(client, 2, "forwarder"))
	both := client.marked(t)
	require.Len(t, both, 8)
	first.die()

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	require.Equal(t, []string{"hop1-fwd", "hop2-fwd"}, second.leftovers.Owners())
	second.request(t, chainHop(client, 1, "forwarder"))
	require.Equal(t, []string{"hop2-fwd"}, second.leftovers.Owners(), "hop 1's heal claimed another leftover than its own")
	require.Equal(t, []string{"hop1-fwd", "hop2-fwd"}, recordIDs(t, journalDir), "hop 1's heal dropped a record")
	second.request(t, chainHop(client, 2, "forwarder"))
	require.Empty(t, second.leftovers.Owners(), "hop 2's leftover was not reachable by its own Request")
	require.Equal(t, []string{"hop1-fwd", "hop2-fwd"}, recordIDs(t, journalDir))
	require.Equal(t, both, client.marked(t))
}

// A forwarder that comes back under another name gets a new segment ID for each hop (sdk's
// updatepath): each hop still finds its own leftover, by its position and the asking peer's
// connection, and never the other's; the old records are dropped once the new ones are in.
func TestEachHopOfALocalChainIsFoundAfterTheForwarderWasRenamed(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, chainHop(client, 1, "forwarder"))
	first.request(t, chainHop(client, 2, "forwarder"))
	first.die()

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	renamed := func(hop int) *networkservice.Connection {
		conn := chainHop(client, hop, "forwarder-replacement")
		conn.Id = "new-" + conn.GetId()
		conn.GetPath().GetPathSegments()[conn.GetPath().GetIndex()].Id = conn.GetId()
		return conn
	}
	second.request(t, renamed(2))
	require.Equal(t, []string{"hop1-fwd"}, second.leftovers.Owners(), "hop 2's heal claimed another leftover than its own")
	second.request(t, renamed(1))
	require.Empty(t, second.leftovers.Owners())
	require.Equal(t, []string{"new-hop1-fwd", "new-hop2-fwd"}, recordIDs(t, journalDir))
}

// Releasing one hop's leftover (its grace period ended) leaves the other hop's record and state.
func TestReleasingOneHopLeavesTheOther(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, chainHop(client, 2, "forwarder"))
	onlyHop2 := client.marked(t)
	first.request(t, chainHop(client, 1, "forwarder"))
	first.die()

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	second.request(t, chainHop(client, 2, "forwarder"))
	require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
	require.Equal(t, []string{"hop2-fwd"}, recordIDs(t, journalDir))
	require.Equal(t, onlyHop2, client.marked(t))
}
