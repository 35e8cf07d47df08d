package restore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal/journaltest"
	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
)

// A connection requested again after a restart finds its rules and routes intact: the chain
// adopts them, nothing is deleted or rewritten, and its journal record stays as it was.
func TestRestartWithIntactKernelStateWritesNothing(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	_, both := previousLife(t, client, journalDir, vppConn, fwdNetns)
	recordBefore, err := os.Stat(filepath.Join(journalDir, recordFile(t, journalDir, "conn-a")))
	require.NoError(t, err)

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	require.Equal(t, []string{"conn-a", "conn-b"}, second.leftovers.Owners())
	watch, err := netwatch.Start("/var/run/netns/" + client.name)
	require.NoError(t, err)
	defer func() { _, _ = watch.Stop() }()
	second.request(t, client.connection("conn-a", "nsm-a", 1))
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	events, err := watch.Settle()
	require.NoError(t, err)
	require.Empty(t, netwatch.Writes(events), "rules, routes or addresses written although the kernel state was intact")
	require.Empty(t, second.leftovers.Owners(), "the leftovers were not settled by the Requests")

	require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
	require.Equal(t, both, client.marked(t), "the expiry pass removed state of connections that came back")
	recordAfter, err := os.Stat(filepath.Join(journalDir, recordFile(t, journalDir, "conn-a")))
	require.NoError(t, err)
	require.True(t, os.SameFile(recordBefore, recordAfter), "the journal record was rewritten")
}

// recordFile is the name of the record of id in dir.
func recordFile(t *testing.T, dir, id string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		if strings.Contains(string(data), `"id":"`+id+`"`) {
			return filepath.Base(name)
		}
	}
	t.Fatalf("no record of %s in %s", id, dir)
	return ""
}

// A connection that died while the forwarder was down is released once it is not requested
// within the grace period: its rules and routes go, those of a live connection in the same
// namespace stay, and its journal record is removed.
func TestUnclaimedConnectionIsReleasedAfterTheGracePeriod(t *testing.T) {
	for _, interfaceGone := range []bool{false, true} {
		t.Run(fmt.Sprintf("interface gone %v", interfaceGone), func(t *testing.T) {
			client := newClientNetns(t, "nsm-a", "nsm-b")
			vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
			onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
			if interfaceGone {
				// As when the client's tap went with a VPP that restarted.
				link, err := client.handle.LinkByName("nsm-a")
				require.NoError(t, err)
				require.NoError(t, client.handle.LinkDel(link))
			}

			second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
			second.request(t, client.connection("conn-b", "nsm-b", 2))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			second.leftovers.ExpireAfter(ctx, 50*time.Millisecond)
			require.Eventually(t, func() bool { return len(recordIDs(t, journalDir)) == 1 }, 5*time.Second, 20*time.Millisecond,
				"conn-a's journal record outlived the grace period")
			require.Equal(t, onlyB, client.marked(t))
			require.Equal(t, []string{"conn-b"}, recordIDs(t, journalDir))
		})
	}
}

// Closing a connection that still has a leftover releases its kernel state too.
func TestCloseReleasesTheLeftover(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	_, err := second.chain.Close(context.Background(), client.connection("conn-a", "nsm-a", 1))
	require.NoError(t, err)
	require.Equal(t, onlyB, client.marked(t))
	require.Equal(t, []string{"conn-b"}, recordIDs(t, journalDir))
}

// failsRequests fails every Request once the rest of the chain ran, as a mechanism that cannot
// be built does.
type failsRequests struct{}

func (failsRequests) Request(context.Context, *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return nil, errors.New("the next hop refused")
}

func (failsRequests) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// A re-Request that fails leaves the previous run's leftover where it was: its state is released
// by the grace period or a Close, not forgotten.
func TestFailedRequestAgainKeepsTheLeftover(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns, failsRequests{})
	_, err := second.chain.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: client.connection("conn-a", "nsm-a", 1)})
	require.Error(t, err)
	require.Equal(t, []string{"conn-a", "conn-b"}, second.leftovers.Owners(), "the failed Request dropped the leftover")
	require.Equal(t, []string{"conn-a", "conn-b"}, recordIDs(t, journalDir), "the failed Request dropped the record")

	require.NoError(t, second.leftovers.ReleaseOwned(context.Background(), "conn-a"))
	require.Equal(t, onlyB, client.marked(t), "the leftover of the failed Request was not released")
	require.Equal(t, []string{"conn-b"}, recordIDs(t, journalDir))
}

// crashesAfterProgramming copies the journal directory once the elements ahead of it programmed
// the kernel, before the chain could commit: the disk as a forwarder SIGKILLed at that moment
// leaves it. The copy becomes the next run's journal.
type crashesAfterProgramming struct {
	journalDir, diskAtCrash string
}

func (c *crashesAfterProgramming) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := journaltest.Snapshot(c.journalDir, c.diskAtCrash); err != nil {
		return nil, err
	}
	return conn, nil
}

func (c *crashesAfterProgramming) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// The forwarder dies after the kernel state of a client's first Request was programmed and before
// the Request completed: the journal's intent, written before the programming and completed with
// the endpoint's answer, names it, so the next run removes it once the connection does not come
// back, even when the client's interface is gone too (a VPP that restarted took the tap with it)
// and only the recorded policies lead to the rules.
func TestCrashBetweenProgrammingAndCommitLeavesNothingBehind(t *testing.T) {
	for _, interfaceGone := range []bool{false, true} {
		t.Run(fmt.Sprintf("interface gone %v", interfaceGone), func(t *testing.T) {
			client := newClientNetns(t, "nsm-a")
			vppConn, fwdNetns, journalDir, diskAtCrash := testVPP(t), forwarderNetns(t), t.TempDir(), t.TempDir()
			granted := client.connection("conn-a", "nsm-a", 1)
			crash := &crashesAfterProgramming{journalDir: journalDir, diskAtCrash: diskAtCrash}
			first := startForwarderRunWithCrashPoint(t, client, journalDir, vppConn, fwdNetns, crash, &answersWithContext{context: granted.GetContext()})
			_, err := first.chain.Request(context.Background(), firstRequest(granted))
			require.NoError(t, err)
			require.Len(t, client.marked(t), 4, "the first run programmed nothing")
			require.Equal(t, []string{"conn-a"}, recordIDs(t, diskAtCrash), "nothing on disk names the programmed connection")
			first.die()
			if interfaceGone {
				link, err := client.handle.LinkByName("nsm-a")
				require.NoError(t, err)
				require.NoError(t, client.handle.LinkDel(link))
			}

			second := startForwarderRun(t, client, diskAtCrash, vppConn, fwdNetns)
			require.Equal(t, []string{"conn-a"}, second.leftovers.Owners())
			require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
			require.Empty(t, client.marked(t), "the rules and routes programmed before the crash outlived the release")
			require.Empty(t, recordIDs(t, diskAtCrash))
		})
	}
}

// The namespace recorded for a connection is gone and its inode now belongs to another namespace
// holding look-alike state (the same interface name, our mark, the tables the connection's ID
// hashes to): the release must not touch it. The reuse is simulated by changing the recorded
// cookie, as a namespace that got the recorded inode after the recorded one died would differ.
func TestRecordedInodeNowOfAnotherNamespaceIsNotTouched(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, client.connection("conn-a", "nsm-a", 1))
	lookAlike := client.marked(t)
	require.Len(t, lookAlike, 4)
	first.die()
	rewriteCookie(t, filepath.Join(journalDir, recordFile(t, journalDir, "conn-a")))

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
	require.Equal(t, lookAlike, client.marked(t), "the release acted in a namespace that only has the recorded inode")
	require.Empty(t, recordIDs(t, journalDir), "a connection whose namespace is gone stays in the journal")
}

// rewriteCookie changes every namespace cookie in a record file.
func rewriteCookie(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	start := strings.Index(text, `"cookie":`)
	require.NotEqual(t, -1, start, "the record names no namespace identity: %s", text)
	end := start + len(`"cookie":`)
	for end < len(text) && text[end] >= '0' && text[end] <= '9' {
		end++
	}
	text = text[:start] + `"cookie":1` + text[end:]
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
}

// A connection whose namespace is gone (its pod was deleted) took its kernel state with it: the
// release only forgets it.
func TestLeftoverOfAVanishedNamespaceIsForgotten(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	first := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	first.request(t, client.connection("conn-a", "nsm-a", 1))
	first.die()
	_ = client.ns.Close()
	require.NoError(t, netns.DeleteNamed(client.name))

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
	require.Empty(t, recordIDs(t, journalDir))
}
