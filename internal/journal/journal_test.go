package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/journal"
)

func kernelConnection(id, token string) *networkservice.Connection {
	mechanism := kernel.New("inode://4/4026532000")
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

// recordFiles lists the journal's record files (temporary files excluded).
func recordFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	return files
}

func TestRecordSurvivesReopenWithoutTokensAndForgetRemovesIt(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "forwarder-a")
	j, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, j.Record(kernelConnection("conn-1", "secret-token")))
	require.NoError(t, j.Record(kernelConnection("conn-2", "secret-token")))
	require.Len(t, recordFiles(t, dir), 2)
	for _, file := range recordFiles(t, dir) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NotContains(t, string(data), "secret-token")
		require.NotContains(t, string(data), "someOtherParameter")
	}

	reopened, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	conns := reopened.Connections()
	require.Len(t, conns, 2)
	got := conns[0]
	require.Equal(t, "conn-1", got.GetId())
	require.Equal(t, "inode://4/4026532000", kernel.ToMechanism(got.GetMechanism()).GetNetNSURL())
	require.Equal(t, "nsm-1", kernel.ToMechanism(got.GetMechanism()).GetInterfaceName())
	require.Equal(t, []string{"nsc-conn-1", "conn-1"}, []string{got.GetPath().GetPathSegments()[0].GetId(), got.GetPath().GetPathSegments()[1].GetId()})
	require.True(t, proto.Equal(kernelConnection("conn-1", "").GetContext(), got.GetContext()))
	require.Empty(t, got.GetPath().GetPathSegments()[0].GetToken())
	require.Nil(t, got.GetLabels())

	require.NoError(t, reopened.Forget("conn-1"))
	require.NoError(t, reopened.Forget("conn-1"), "forgetting twice")
	require.NoError(t, reopened.Forget("never-recorded"))
	require.Len(t, recordFiles(t, dir), 1)
	again, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.Len(t, again.Connections(), 1)
	require.Equal(t, "conn-2", again.Connections()[0].GetId())
}

func TestRefreshThatOnlyChangesTokensWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, j.Record(kernelConnection("conn-1", "token-1")))
	files := recordFiles(t, dir)
	require.Len(t, files, 1)
	before, err := os.Stat(files[0])
	require.NoError(t, err)

	require.NoError(t, j.Record(kernelConnection("conn-1", "token-2")))
	// A restarted forwarder sees the same connection refreshed: still nothing to write.
	reopened, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, reopened.Record(kernelConnection("conn-1", "token-3")))
	after, err := os.Stat(files[0])
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "the record was replaced although only tokens changed")

	changed := kernelConnection("conn-1", "token-4")
	changed.GetContext().GetIpContext().Policies[0].From = "172.16.0.3/32"
	require.NoError(t, reopened.Record(changed))
	after, err = os.Stat(files[0])
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "a changed IP context was not written")
}

func TestConnectionWithoutKernelMechanismIsNotRecorded(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(context.Background(), dir)
	require.NoError(t, err)
	conn := kernelConnection("conn-1", "")
	require.NoError(t, j.Record(conn))
	conn.Mechanism = memif.New("file:///proc/1/ns/net")
	require.NoError(t, j.Record(conn), "a heal onto another mechanism")
	require.Empty(t, recordFiles(t, dir))
	require.Empty(t, j.Connections())
}

func TestUnreadableRecordsAreRemovedAtOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.NoError(t, j.Record(kernelConnection("conn-1", "")))
	garbage := filepath.Join(dir, "0123456789abcdef0123456789abcdef.json")
	require.NoError(t, os.WriteFile(garbage, []byte("{\"id\": \"conn-"), 0o600))
	// Valid JSON under a name that is not its connection's: copied or tampered with.
	misplaced := filepath.Join(dir, "fedcba9876543210fedcba9876543210.json")
	require.NoError(t, os.WriteFile(misplaced, []byte(`{"id": "conn-9"}`), 0o600))
	interrupted := filepath.Join(dir, ".tmp-12345")
	require.NoError(t, os.WriteFile(interrupted, []byte("half a rec"), 0o600))
	// In the right file, but with more than Record writes: not a record of this journal.
	require.NoError(t, j.Record(kernelConnection("conn-2", "")))
	enlarged := recordFileOf(t, dir, "conn-2")
	require.NoError(t, os.WriteFile(enlarged, []byte(`{"id": "conn-2", "mechanism": {"type": "KERNEL"}, "labels": {"a": "b"}}`), 0o600))

	reopened, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	require.Len(t, reopened.Connections(), 1)
	for _, removed := range []string{garbage, misplaced, interrupted, enlarged} {
		_, err := os.Stat(removed)
		require.True(t, os.IsNotExist(err), "%s was kept", removed)
	}
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

func TestOpenFailsOnADirectoryItCannotWrite(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o600))
	_, err := journal.Open(context.Background(), filepath.Join(notADir, "forwarder-a"))
	require.Error(t, err)
}

func TestServerRecordsSuccessfulRequestsAndForgetsOnEveryClose(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := journal.Open(ctx, dir)
	require.NoError(t, err)
	tail := &failingTail{}
	server := next.NewNetworkServiceServer(journal.NewServer(j), tail)

	tail.requestErr = errors.New("mechanism failed")
	_, err = server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "")})
	require.Error(t, err)
	require.Empty(t, j.Connections(), "a failed Request was recorded")

	tail.requestErr = nil
	conn, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "")})
	require.NoError(t, err)
	require.Len(t, recordFiles(t, dir), 1)

	tail.closeErr = errors.New("VPP went away")
	_, err = server.Close(ctx, conn)
	require.Error(t, err)
	require.Empty(t, recordFiles(t, dir), "a Close that failed behind left the record")
}

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

// Requests and Closes of one connection racing each other leave the disk and the journal agreeing.
func TestConcurrentRecordAndForgetAgreeWithTheDisk(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(context.Background(), dir)
	require.NoError(t, err)
	done := make(chan struct{})
	for worker := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				conn := kernelConnection("conn-1", "")
				conn.GetContext().GetIpContext().SrcIpAddrs = []string{fmt.Sprintf("172.16.%d.%d/32", worker, i)}
				if i%3 == 0 {
					_ = j.Forget("conn-1")
					continue
				}
				_ = j.Record(conn)
			}
		}()
	}
	for range 4 {
		<-done
	}
	require.Len(t, recordFiles(t, dir), len(j.Connections()))
	reopened, err := journal.Open(context.Background(), dir)
	require.NoError(t, err)
	require.Equal(t, len(j.Connections()), len(reopened.Connections()))
	if len(j.Connections()) == 1 {
		require.True(t, proto.Equal(j.Connections()[0], reopened.Connections()[0]), "the disk holds another content than the journal")
	}
}
