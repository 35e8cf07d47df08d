package restore

import (
	"context"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/adapters"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// answersFrom stands for the next hop: the endpoint it reaches answers with its own segment after
// the forwarder's.
type answersFrom struct {
	endpoint, segmentID string
}

func (a *answersFrom) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn := request.GetConnection().Clone()
	conn.NetworkServiceEndpointName = a.endpoint
	segments := conn.GetPath().GetPathSegments()[:conn.GetPath().GetIndex()+1]
	conn.Path.PathSegments = append(segments, &networkservice.PathSegment{Name: a.endpoint, Id: a.segmentID, Token: "token-of-" + a.segmentID})
	return conn, nil
}

func (a *answersFrom) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return &empty.Empty{}, nil
}

// restoreClientOf is this package's client in a run's chain, built once the run's leftovers are.
type restoreClientOf struct {
	client networkservice.NetworkServiceClient
}

func (r *restoreClientOf) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	return r.client.Request(ctx, request, opts...)
}

func (r *restoreClientOf) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// runWithNextHop is a forwarder run whose onward chain reaches endpoint through this package's
// client; the run's leftovers send their next hops' Closes into the channel returned.
func runWithNextHop(t *testing.T, client *clientNetns, journalDir string, endpoint string) (*forwarderRun, chan *networkservice.Connection) {
	t.Helper()
	restoreClient := &restoreClientOf{}
	run := startForwarderRun(t, client, journalDir, testVPP(t), forwarderNetns(t),
		adapters.NewClientToServer(restoreClient), &answersFrom{endpoint: endpoint, segmentID: endpoint + "-conn"})
	restoreClient.client = NewClient(run.leftovers)
	closed := make(chan *networkservice.Connection, 1)
	run.leftovers.CloseNextHopsWith(func(_ context.Context, conn *networkservice.Connection) error {
		closed <- conn
		return nil
	})
	return run, closed
}

// previousRunToNse1 leaves conn-a, reaching endpoint nse-1, from a run that died.
func previousRunToNse1(t *testing.T, client *clientNetns, journalDir string) *networkservice.Connection {
	t.Helper()
	conn := client.connection("conn-a", "nsm-a", 1)
	conn.NetworkService = "vl3"
	first, _ := runWithNextHop(t, client, journalDir, "nse-1")
	first.request(t, conn.Clone())
	first.die()
	return conn
}

// requireNextHopClosed waits for the Close nse-1 must get: conn-a's, at the forwarder's index,
// the path up to the forwarder as the caller sent it and nse-1's recorded segment after it.
func requireNextHopClosed(t *testing.T, closed chan *networkservice.Connection) {
	t.Helper()
	select {
	case got := <-closed:
		require.Equal(t, "nse-1", got.GetNetworkServiceEndpointName())
		require.Equal(t, "conn-a", got.GetId())
		require.Equal(t, uint32(1), got.GetPath().GetIndex())
		segments := got.GetPath().GetPathSegments()
		require.Len(t, segments, 3)
		require.Equal(t, "token-of-this-run", segments[1].GetToken(), "the Close does not carry the caller's token")
		require.Equal(t, "nse-1-conn", segments[2].GetId())
	case <-time.After(5 * time.Second):
		t.Fatal("nse-1, the previous run's next hop, was never told to close")
	}
}

// A client that reselected while its forwarder was down comes back to the restarted forwarder
// toward another endpoint: the endpoint the previous run reached is told to close its side, which
// it would otherwise keep until the connection expires there.
func TestAConnectionBackTowardAnotherEndpointClosesItAtTheOldOne(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	journalDir := t.TempDir()
	conn := previousRunToNse1(t, client, journalDir)

	second, closed := runWithNextHop(t, client, journalDir, "nse-2")
	second.request(t, conn.Clone())

	requireNextHopClosed(t, closed)
}

// A previous run's connection closed before it came back: sdk's begin drops that Close before
// the onward chain, so the endpoint hears of it from the leftover's release.
func TestAClosedLeftoverClosesItAtItsNextHop(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	journalDir := t.TempDir()
	conn := previousRunToNse1(t, client, journalDir)

	second, closed := runWithNextHop(t, client, journalDir, "nse-2")
	_, err := NewCloseServer(second.leftovers, authorize.NewServer(authorize.Any())).Close(context.Background(), conn.Clone())
	require.NoError(t, err)

	requireNextHopClosed(t, closed)
	require.Empty(t, second.leftovers.Owners(), "the Close did not release the leftover")
}
