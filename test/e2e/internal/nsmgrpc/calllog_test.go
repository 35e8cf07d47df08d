package nsmgrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// hop answers a Request as the next hop's chain does: sdk's updatepath moves the request's path
// on to its own segment, in place, and the answer has the index back at the caller's.
type hop struct{}

func (hop) Request(_ context.Context, r *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	path := r.GetConnection().GetPath()
	path.PathSegments = append(path.PathSegments, &networkservice.PathSegment{Name: "fwd", Id: "fwd-id"})
	path.Index++
	conn := proto.Clone(r.GetConnection()).(*networkservice.Connection)
	conn.Path.Index--
	return conn, nil
}

func (hop) Close(context.Context, *networkservice.Connection) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// The log names the caller of a served call and the hop called by a call made, keyed by the
// client's own connection ID.
func TestCallLogNamesBothSidesOfACall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	calls, err := nsmgrpc.NewCallLog(ctx, path)
	require.NoError(t, err)

	listener := bufconn.Listen(1 << 20)
	server := grpc.NewServer(calls.ServerOptions()...)
	networkservice.RegisterNetworkServiceServer(server, hop{})
	go func() { _ = server.Serve(listener) }()
	defer server.Stop()
	cc, err := grpc.NewClient("passthrough:///hop", append(calls.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }))...)
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()

	_, err = networkservice.NewNetworkServiceClient(cc).Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id: "nsmgr-id", Path: &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{{Name: "nsc", Id: "c1"}, {Name: "nsmgr", Id: "nsmgr-id"}}},
	}})
	require.NoError(t, err)

	var got []nsmgrpc.Call
	require.Eventually(t, func() bool {
		got = readCalls(t, path)
		return len(got) == 2
	}, 5*time.Second, 10*time.Millisecond)
	served, made := got[0], got[1]
	require.False(t, served.Out)
	require.Equal(t, "nsmgr", served.Peer, "a served call names its caller")
	require.True(t, made.Out)
	require.Equal(t, "fwd", made.Peer, "a call made names the hop that answered")
	for _, c := range got {
		require.Equal(t, "Request", c.Method)
		require.Equal(t, "c1", c.Key)
		require.True(t, c.OK)
		require.False(t, c.End.Before(c.Start))
	}
	require.False(t, made.Start.After(served.Start), "the call made encloses the one served")
	require.False(t, made.End.Before(served.End), "the call made encloses the one served")
}

func readCalls(t *testing.T, path string) []nsmgrpc.Call {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var calls []nsmgrpc.Call
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var c nsmgrpc.Call
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &c))
		calls = append(calls, c)
	}
	return calls
}
