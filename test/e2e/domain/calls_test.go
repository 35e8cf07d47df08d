package domain

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Request through nsmgr -> forwarder -> next hop, as the nsmgr and the next hop log it: the
// forwarder's own time is its call less its nested onward call; a refused Request, an onward
// call of another connection and one outside the call do not count.
func TestForwarderRequestsSubtractTheOnwardCall(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	calls := []Call{
		{Method: "Request", Key: "c1", Peer: "client", Start: at(0), End: at(100), OK: true},
		{Out: true, Method: "Request", Key: "c1", Peer: "fwd", Start: at(10), End: at(90), OK: true},
		{Method: "Request", Key: "c1", Peer: "fwd", Start: at(30), End: at(75), OK: true},
		{Out: true, Method: "Request", Key: "c1", Peer: "nse", Start: at(40), End: at(60), OK: true},
		// c2: the forwarder refused it (no onward call).
		{Out: true, Method: "Request", Key: "c2", Peer: "fwd", Start: at(10), End: at(20), OK: false},
		// c3: an onward call of c3 that is not nested in the forwarder's call.
		{Out: true, Method: "Request", Key: "c3", Peer: "fwd", Start: at(200), End: at(210), OK: true},
		{Method: "Request", Key: "c3", Peer: "fwd", Start: at(205), End: at(215), OK: true},
		// A Close is not a Request.
		{Out: true, Method: "Close", Key: "c1", Peer: "fwd", Start: at(300), End: at(310), OK: true},
		{Method: "Close", Key: "c1", Peer: "fwd", Start: at(302), End: at(305), OK: true},
	}
	got := ForwarderRequests(calls, "fwd")
	require.Len(t, got, 1)
	require.Equal(t, "c1", got[0].Key)
	require.Equal(t, 35*time.Millisecond, got[0].Forwarder)
	require.Equal(t, 20*time.Millisecond, got[0].BeforeNextHop)
	require.Equal(t, 15*time.Millisecond, got[0].AfterNextHop)

	grants := ClientGrants(calls, "cli")
	require.Equal(t, map[string][]time.Time{"c1": {at(100)}}, grants)
}

// The harness reads call logs while the programs write them: a last line not yet ended is left
// for the next read, and a whole line that is no call is still an error.
func TestReadCallsLeavesTheLineStillBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	whole := `{"out":true,"method":"Request","key":"c1","peer":"fwd","start":"2026-12-02T00:47:13Z","end":"2026-12-02T00:47:14Z","ok":true}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(whole+whole+`{"out":true,"method":"Req`), 0o600))
	calls, err := readCalls("nsmgr", path)
	require.NoError(t, err)
	require.Len(t, calls, 2)
	require.Equal(t, "c1", calls[1].Key)

	require.NoError(t, os.WriteFile(path, []byte(whole+"{not a call}\n"), 0o600))
	_, err = readCalls("nsmgr", path)
	require.ErrorContains(t, err, path)
}
