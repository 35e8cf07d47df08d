package restore

import (
	"context"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
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

// A client that reselected while its forwarder was down comes back to the restarted forwarder
// toward another endpoint: the endpoint the previous run reached is told to close its side, which
// it would otherwise keep until the connection expires there.
func TestAConnectionBackTowardAnotherEndpointClosesItAtTheOldOne(t *testing.T) {
	client := newClientNetns(t, "nsm-a")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	conn := client.connection("conn-a", "nsm-a", 1)
	conn.NetworkService = "vl3"
	first := &restoreClientOf{}
	firstRun := startForwarderRun(t, client, journalDir, vppConn, fwdNetns,
		adapters.NewClientToServer(first), &answersFrom{endpoint: "nse-1", segmentID: "nse-1-conn"})
	first.client = NewClient(firstRun.leftovers, nil)
	firstRun.request(t, conn.Clone())
	firstRun.die()

	closed := make(chan *networkservice.Connection, 1)
	closeNextHop := func(_ context.Context, conn *networkservice.Connection) error {
		closed <- conn
		return nil
	}
	second := &restoreClientOf{}
	secondRun := startForwarderRun(t, client, journalDir, vppConn, fwdNetns,
		adapters.NewClientToServer(second), &answersFrom{endpoint: "nse-2", segmentID: "nse-2-conn"})
	second.client = NewClient(secondRun.leftovers, closeNextHop)
	secondRun.request(t, conn.Clone())

	select {
	case got := <-closed:
		require.Equal(t, "nse-1", got.GetNetworkServiceEndpointName())
		require.Equal(t, "conn-a", got.GetId())
		require.Equal(t, uint32(1), got.GetPath().GetIndex())
		segments := got.GetPath().GetPathSegments()
		require.Len(t, segments, 3)
		require.Equal(t, "token-of-this-run", segments[1].GetToken(), "the Close does not carry the current Request's token")
		require.Equal(t, "nse-1-conn", segments[2].GetId())
	case <-time.After(5 * time.Second):
		t.Fatal("the endpoint of the previous run's next hop was never told to close")
	}
}
