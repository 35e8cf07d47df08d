package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// ownNetns is the test process's namespace as recvfd hands a client's to the chain: a file.
const ownNetns = "file:///proc/self/ns/net"

func kernelConnection(id, token, netnsURL string) *networkservice.Connection {
	mechanism := kernel.New(netnsURL)
	kernel.ToMechanism(mechanism).SetInterfaceName("nsm-1")
	mechanism.Parameters["someOtherParameter"] = "not needed for cleanup"
	return &networkservice.Connection{
		Id:        id,
		Mechanism: mechanism,
		Labels:    map[string]string{"app": "nsc"},
		Path: &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{
			{Id: "nsc-" + id, Name: "nsc", Token: token, Expires: timestamppb.Now()},
			{Id: id, Name: "forwarder", Token: token, Expires: timestamppb.Now()},
		}},
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: []string{"172.16.0.2/32"},
			Policies: []*networkservice.PolicyRoute{{
				From:   "172.16.0.2/32",
				Routes: []*networkservice.Route{{Prefix: "10.0.0.0/8", NextHop: "172.16.0.1"}},
			}},
		}},
	}
}

// outgoingConnection is the next hop's answer to kernelConnection(id).
func outgoingConnection(id, token string) *networkservice.Connection {
	conn := kernelConnection(id, token, "inode://4/4026532999")
	conn.Id = "nsmgr-" + id
	conn.Path.PathSegments = append(conn.Path.PathSegments, &networkservice.PathSegment{Id: conn.Id, Name: "nsmgr", Token: token})
	return conn
}

// program runs what one successful Request does to the journal: begin, intend, commit.
func program(t testing.TB, j *journal.Journal, incoming, outgoing *networkservice.Connection) {
	t.Helper()
	require.NoError(t, j.Begin(incoming.GetId(), incoming))
	require.NoError(t, j.Intend(incoming.GetId(), outgoing))
	require.NoError(t, j.Commit(incoming.GetId(), incoming, outgoing, []journal.Interface{{Tag: incoming.GetId(), SwIfIndex: 3}}))
}

// recordFiles lists the journal's record files (temporary files excluded).
func recordFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	return files
}

func open(t testing.TB, dir string, opts ...journal.Option) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func requireRoot(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Skip("the namespace's identity needs root")
	}
}

func TestCommittedRecordSurvivesReopenWithoutTokensAndNamesItsNamespaceByIdentity(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "forwarder-a")
	j := open(t, dir)
	program(t, j, kernelConnection("conn-1", "secret-token", ownNetns), outgoingConnection("conn-1", "secret-token"))
	program(t, j, kernelConnection("conn-2", "secret-token", ownNetns), outgoingConnection("conn-2", "secret-token"))
	require.Len(t, recordFiles(t, dir), 2)
	for _, file := range recordFiles(t, dir) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NotContains(t, string(data), "secret-token")
		require.NotContains(t, string(data), "someOtherParameter")
	}
	require.NoError(t, j.Close())

	reopened := open(t, dir)
	records := reopened.Records()
	require.Len(t, records, 2)
	got := records[0]
	require.Equal(t, "conn-1", got.ID)
	require.Nil(t, got.Intent, "a committed Request leaves no intent")
	own, err := netnsid.Of("/proc/self/ns/net")
	require.NoError(t, err)
	netns := kernel.ToMechanism(got.Committed.Incoming.GetMechanism()).GetNetNSURL()
	require.Equal(t, own.InodeURL(), netns, "the namespace is named by inode, not by this run's file")
	require.Equal(t, own, got.Namespaces[netns])
	require.Equal(t, "nsm-1", kernel.ToMechanism(got.Committed.Incoming.GetMechanism()).GetInterfaceName())
	require.Equal(t, "nsmgr-conn-1", got.Committed.Outgoing.GetId())
	require.Equal(t, []string{"conn-1", "nsc-conn-1", "nsmgr-conn-1"}, got.IDs())
	require.True(t, proto.Equal(kernelConnection("conn-1", "", ownNetns).GetContext(), got.Committed.Incoming.GetContext()))
	require.Empty(t, got.Committed.Incoming.GetPath().GetPathSegments()[0].GetToken())
	require.Nil(t, got.Committed.Incoming.GetLabels())
	require.Equal(t, []journal.Interface{{Tag: "conn-1", SwIfIndex: 3}}, got.Committed.Interfaces)

	require.NoError(t, reopened.Forget("conn-1"))
	require.NoError(t, reopened.Forget("conn-1"), "forgetting twice")
	require.NoError(t, reopened.Forget("never-recorded"))
	onDisk, err := journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, onDisk, 1)
	require.Equal(t, "conn-2", onDisk[0].ID)
}

func TestRefreshThatOnlyChangesTokensWritesNothing(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	program(t, j, kernelConnection("conn-1", "token-1", "inode://4/4026532000"), outgoingConnection("conn-1", "token-1"))
	files := recordFiles(t, dir)
	require.Len(t, files, 1)
	before, err := os.Stat(files[0])
	require.NoError(t, err)

	program(t, j, kernelConnection("conn-1", "token-2", "inode://4/4026532000"), outgoingConnection("conn-1", "token-2"))
	require.NoError(t, j.Close())
	// A restarted forwarder sees the same connection refreshed: still nothing to write.
	reopened := open(t, dir)
	program(t, reopened, kernelConnection("conn-1", "token-3", "inode://4/4026532000"), outgoingConnection("conn-1", "token-3"))
	after, err := os.Stat(files[0])
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "the record was replaced although only tokens changed")

	changed := kernelConnection("conn-1", "token-4", "inode://4/4026532000")
	changed.GetContext().GetIpContext().Policies[0].From = "172.16.0.3/32"
	require.NoError(t, reopened.Begin("conn-1", changed))
	after, err = os.Stat(files[0])
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "a changed IP context was not written as an intent before the chain ran")
	rec := reopened.Lookup("conn-1")
	require.NotNil(t, rec.Intent)
	require.Equal(t, "172.16.0.3/32", rec.Intent.Incoming.GetContext().GetIpContext().GetPolicies()[0].GetFrom())
	require.Equal(t, "172.16.0.2/32", rec.Committed.Incoming.GetContext().GetIpContext().GetPolicies()[0].GetFrom(),
		"the committed state stays until the chain completes")
}

// The endpoint gives the IP context in its answer: the intent names it, and the outgoing side,
// before anything of either side is programmed.
func TestIntendNamesTheNextHopsAnswerBeforeCommit(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	request := kernelConnection("conn-1", "", "inode://4/4026532000")
	request.Context = nil
	require.NoError(t, j.Begin("conn-1", request))
	answer := outgoingConnection("conn-1", "")
	require.NoError(t, j.Intend("conn-1", answer))

	onDisk, err := journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, onDisk, 1)
	require.Nil(t, onDisk[0].Committed)
	require.Equal(t, "nsmgr-conn-1", onDisk[0].Intent.Outgoing.GetId())
	require.True(t, proto.Equal(answer.GetContext(), onDisk[0].Intent.Incoming.GetContext()), "the intent lacks the IP context the chain is about to program")
	require.Error(t, j.Intend("never-begun", answer))
}

func TestUnreadableRecordsAreMovedAsideAtOpen(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)
	program(t, j, kernelConnection("conn-2", "", "inode://4/4026532000"), nil)
	require.NoError(t, j.Close())
	// In the right file, but with more than the journal writes: not a record of this journal.
	enlarged := recordFileOf(t, dir, "conn-2")
	data, err := os.ReadFile(enlarged)
	require.NoError(t, err)
	data = []byte(strings.Replace(string(data), `"incoming":{`, `"incoming":{"labels":{"a":"b"},`, 1))
	require.Contains(t, string(data), `"labels"`)
	require.NoError(t, os.WriteFile(enlarged, data, 0o600))
	garbage := filepath.Join(dir, "0123456789abcdef0123456789abcdef.json")
	require.NoError(t, os.WriteFile(garbage, []byte(`{"version": 2, "id": "conn-`), 0o600))
	// A valid record under a name that is not its connection's: copied or tampered with.
	valid, err := os.ReadFile(recordFileOf(t, dir, "conn-1"))
	require.NoError(t, err)
	misplaced := filepath.Join(dir, "fedcba9876543210fedcba9876543210.json")
	require.NoError(t, os.WriteFile(misplaced, valid, 0o600))
	// A bare connection, as the journal's first format wrote it.
	oldFormat := filepath.Join(dir, "00000000000000000000000000000000.json")
	require.NoError(t, os.WriteFile(oldFormat, []byte(`{"id": "conn-9"}`), 0o600))
	interrupted := filepath.Join(dir, ".tmp-12345")
	require.NoError(t, os.WriteFile(interrupted, []byte("half a rec"), 0o600))

	reopened := open(t, dir)
	require.Len(t, reopened.Records(), 1)
	for _, moved := range []string{garbage, misplaced, oldFormat, enlarged} {
		_, err := os.Stat(moved)
		require.True(t, os.IsNotExist(err), "%s stayed among the records", moved)
		kept, err := os.ReadFile(filepath.Join(dir, "unreadable", filepath.Base(moved)))
		require.NoError(t, err, "%s was not kept for an operator", moved)
		require.NotEmpty(t, kept)
	}
	_, err = os.Stat(interrupted)
	require.True(t, os.IsNotExist(err), "the temporary file of an interrupted write was kept")
}

// recordFileOf finds the file that holds the record of connection id.
func recordFileOf(t *testing.T, dir, id string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, name := range names {
		if data, err := os.ReadFile(name); err == nil && strings.Contains(string(data), `"`+id+`"`) {
			return name
		}
	}
	t.Fatalf("no record of %s in %s", id, dir)
	return ""
}

func TestOpenFailsOnADirectoryItCannotWriteOrThatAnotherForwarderHolds(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o600))
	_, err := journal.Open(context.Background(), filepath.Join(notADir, "forwarder-a"))
	require.Error(t, err)

	dir := t.TempDir()
	j := open(t, dir)
	_, err = journal.Open(context.Background(), dir)
	require.ErrorContains(t, err, "in use by another running forwarder")
	require.NoError(t, j.Close())
	again := open(t, dir)
	require.NotNil(t, again, "the lock goes with the forwarder that held it")
}

// failingTail stands for the chain behind the journal.
type failingTail struct {
	requestErr, closeErr error
}

func (f *failingTail) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if f.requestErr != nil {
		return nil, f.requestErr
	}
	return request.GetConnection(), nil
}

func (f *failingTail) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return &empty.Empty{}, f.closeErr
}

// countingCleanup fails its first failures calls, then succeeds; it counts every call.
type countingCleanup struct {
	failures int32
	calls    atomic.Int32
}

func (c *countingCleanup) cleanup(_ context.Context, rec *journal.Record) error {
	if c.calls.Add(1) <= c.failures {
		return fmt.Errorf("cleanup of %s failed", rec.ID)
	}
	return nil
}

// A Close whose cleanup failed keeps the record and retries until the cleanup succeeds; a Close
// that succeeded forgets it; a first Request that failed is released like a failed Close.
func TestServerKeepsTheRecordOfAFailedCloseAndRetriesTheCleanup(t *testing.T) {
	defer journal.SetRetryDelays(20*time.Millisecond, 50*time.Millisecond)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	j := open(t, dir)
	tail := &failingTail{}
	cleanup := &countingCleanup{failures: 2}
	server := next.NewNetworkServiceServer(metadata.NewServer(), journal.NewServer(ctx, j, cleanup.cleanup), tail)

	tail.requestErr = errors.New("mechanism failed")
	_, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "", "inode://4/4026532000")})
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(recordFiles(t, dir)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the intent of a failed first Request outlived its cleanup")
	require.EqualValues(t, 3, cleanup.calls.Load(), "the cleanup was not retried until it succeeded")

	tail.requestErr = nil
	conn, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "", "inode://4/4026532000")})
	require.NoError(t, err)
	require.Len(t, recordFiles(t, dir), 1)
	require.NotNil(t, j.Lookup("conn-1").Committed)

	cleanup.calls.Store(0)
	tail.closeErr = errors.New("policy rules could not be removed")
	_, err = server.Close(ctx, conn)
	require.Error(t, err)
	require.Eventually(t, func() bool { return cleanup.calls.Load() == 3 }, 5*time.Second, 10*time.Millisecond,
		"the cleanup of a failed Close was not retried")
	require.Eventually(t, func() bool { return len(recordFiles(t, dir)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the record outlived the retried cleanup's success")

	tail.closeErr = nil
	conn, err = server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-2", "", "inode://4/4026532000")})
	require.NoError(t, err)
	cleanup.calls.Store(0)
	_, err = server.Close(ctx, conn)
	require.NoError(t, err)
	require.Empty(t, recordFiles(t, dir))
	require.Zero(t, cleanup.calls.Load(), "a Close that succeeded needs no cleanup")
}

// A Request of the same connection stops the retries of an earlier failed Close: the chain owns it again.
func TestRequestAgainStopsTheRetriedCleanup(t *testing.T) {
	defer journal.SetRetryDelays(20*time.Millisecond, 20*time.Millisecond)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := open(t, t.TempDir())
	program(t, j, kernelConnection("conn-1", "", "inode://4/4026532000"), nil)
	cleanup := &countingCleanup{failures: 1000}
	require.Error(t, j.Retire(ctx, "conn-1", cleanup.cleanup))
	require.Eventually(t, func() bool { return cleanup.calls.Load() >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, j.Begin("conn-1", kernelConnection("conn-1", "", "inode://4/4026532000")))
	calls := cleanup.calls.Load()
	time.Sleep(100 * time.Millisecond)
	require.LessOrEqual(t, cleanup.calls.Load(), calls+1, "the cleanup kept running on a connection requested again")
	require.NotNil(t, j.Lookup("conn-1"))
}

// Requests and Closes of one connection racing each other leave the disk and the journal agreeing.
func TestConcurrentRequestsAndForgetAgreeWithTheDisk(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir)
	done := make(chan struct{})
	for worker := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				conn := kernelConnection("conn-1", "", "inode://4/4026532000")
				conn.GetContext().GetIpContext().SrcIpAddrs = []string{fmt.Sprintf("172.16.%d.%d/32", worker, i)}
				if i%3 == 0 {
					_ = j.Forget("conn-1")
					continue
				}
				_ = j.Begin("conn-1", conn)
				_ = j.Commit("conn-1", conn, nil, nil)
			}
		}()
	}
	for range 4 {
		<-done
	}
	require.Len(t, recordFiles(t, dir), len(j.Records()))
	onDisk, err := journal.Read(dir)
	require.NoError(t, err)
	require.Equal(t, len(j.Records()), len(onDisk))
	if len(onDisk) == 1 {
		inMemory := j.Records()[0]
		require.True(t, proto.Equal(inMemory.Committed.Incoming, onDisk[0].Committed.Incoming), "the disk holds another content than the journal")
	}
}

// A veth pair is recorded twice while a first Request makes it: by its chosen name and MAC
// before it exists, then in full once it is tagged. The intent on disk holds the pair once, in
// full, and a reopened journal reads the same.
func TestAVethPairRecordedBeforeAndAfterItExistsIsHeldOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	conn := kernelConnection("conn-1", "token", ownNetns)
	require.NoError(t, j.Begin(conn.GetId(), conn))
	pending := journal.Interface{Tag: "conn-1", Peer: &journal.Link{Name: "svc-Ab12", MAC: "02:00:00:00:00:01"}}
	made := journal.Interface{Tag: "conn-1", SwIfIndex: 7, Peer: &journal.Link{Name: "svc-Ab12", Index: 42, MAC: "02:00:00:00:00:01"}}
	require.NoError(t, j.NoteCreating(conn.GetId(), pending))
	require.NoError(t, j.NoteCreating(conn.GetId(), pending), "the same entry twice")
	require.Equal(t, []journal.Interface{pending}, j.Lookup("conn-1").Intent.Interfaces)
	require.NoError(t, j.NoteCreating(conn.GetId(), made))
	require.Equal(t, []journal.Interface{made}, j.Lookup("conn-1").Intent.Interfaces)
	require.NoError(t, j.Close())

	records, err := journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, records, 1)
	require.Equal(t, []journal.Interface{made}, records[0].Intent.Interfaces)
}
