package expiry_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
)

// dataPlane stands for the VPP and kernel elements: it counts what reaches it.
type dataPlane struct {
	requests, closes atomic.Int32
}

func (d *dataPlane) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	d.requests.Add(1)
	return next.Server(ctx).Request(ctx, request)
}

func (d *dataPlane) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	d.closes.Add(1)
	return next.Server(ctx).Close(ctx, conn)
}

const (
	tokenLifetime = 2 * time.Second
	gracePeriod   = 200 * time.Millisecond
)

// newForwarderLikeEndpoint builds sdk's endpoint chain with the stock tokens_expired policy, the
// one that refused the expiry Close in field report 1.
func newForwarderLikeEndpoint(ctx context.Context, additional ...networkservice.NetworkServiceServer) endpoint.Endpoint {
	return endpoint.NewServer(ctx, sandbox.GenerateExpiringToken(time.Hour),
		endpoint.WithName("forwarder"),
		endpoint.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies("etc/nsm/opa/common/tokens_expired.rego"))),
		endpoint.WithAdditionalFunctionality(additional...),
	)
}

// requestFromPeer needs a context without deadline: sdk's timeout element fires that much earlier.
//
// It sends a Request as nsmgr would: over gRPC (a peer is present, so policies are checked) with
// nsmgr's own token expiring after tokenLifetime. Passing the returned connection back refreshes it;
// no refresh at all is what happens when the client was OOM-killed.
func requestFromPeer(ctx context.Context, t *testing.T, server networkservice.NetworkServiceServer, previous *networkservice.Connection) *networkservice.Connection {
	t.Helper()
	tok, expires, err := sandbox.GenerateExpiringToken(tokenLifetime)(nil)
	require.NoError(t, err)
	conn := &networkservice.Connection{
		Id:             "nsmgr-conn",
		NetworkService: "ns",
		Path:           &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Name: "nsmgr", Id: "nsmgr-conn"}}},
	}
	if previous != nil {
		conn = previous.Clone()
		conn.Id = "nsmgr-conn"
		conn.GetPath().Index = 0
	}
	conn.GetPath().GetPathSegments()[0].Token = tok
	conn.GetPath().GetPathSegments()[0].Expires = timestamppb.New(expires)

	peerCtx := peer.NewContext(ctx, &peer.Peer{Addr: &net.UnixAddr{Name: "nsmgr.sock", Net: "unix"}})
	returned, err := server.Request(peerCtx, &networkservice.NetworkServiceRequest{Connection: conn})
	require.NoError(t, err)
	return returned
}

func TestWithoutExpiryTheRefusedCloseLeaksTheDataPlane(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plane := new(dataPlane)
	requestFromPeer(ctx, t, newForwarderLikeEndpoint(ctx, plane), nil)
	require.Equal(t, int32(1), plane.requests.Load())

	require.Never(t, func() bool { return plane.closes.Load() > 0 }, tokenLifetime+time.Second, 50*time.Millisecond,
		"sdk's timeout Close got through authorize: the gap this package closes is gone")
}

func TestExpiredConnectionIsReleasedDespiteRefusedClose(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plane := new(dataPlane)
	requestFromPeer(ctx, t, newForwarderLikeEndpoint(ctx, expiry.NewServer(ctx, expiry.WithGracePeriod(gracePeriod)), plane), nil)

	require.Never(t, func() bool { return plane.closes.Load() > 0 }, tokenLifetime/2, 20*time.Millisecond,
		"released before expiry")
	require.Eventually(t, func() bool { return plane.closes.Load() == 1 }, tokenLifetime+5*gracePeriod, 20*time.Millisecond,
		"expired connection's data plane was not released")
	require.Never(t, func() bool { return plane.closes.Load() > 1 }, 3*gracePeriod, 20*time.Millisecond, "released twice")
}

func TestRegularCloseDisarmsTheTimer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plane := new(dataPlane)
	server := newForwarderLikeEndpoint(ctx, expiry.NewServer(ctx, expiry.WithGracePeriod(gracePeriod)), plane)
	conn := requestFromPeer(ctx, t, server, nil)

	_, err := server.Close(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, int32(1), plane.closes.Load())
	require.Never(t, func() bool { return plane.closes.Load() > 1 }, tokenLifetime+3*gracePeriod, 50*time.Millisecond,
		"a connection closed in time must not be closed again at expiry")
}

func TestRefreshPostponesRelease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plane := new(dataPlane)
	server := newForwarderLikeEndpoint(ctx, expiry.NewServer(ctx, expiry.WithGracePeriod(gracePeriod)), plane)
	first := requestFromPeer(ctx, t, server, nil)

	time.Sleep(tokenLifetime / 2)
	refreshed := requestFromPeer(ctx, t, server, first)
	require.Equal(t, first.GetId(), refreshed.GetId())
	require.Equal(t, int32(2), plane.requests.Load())
	refreshedExpiry := refreshed.GetPath().GetPathSegments()[0].GetExpires().AsTime()

	require.Never(t, func() bool { return plane.closes.Load() > 0 }, time.Until(refreshedExpiry)-100*time.Millisecond, 20*time.Millisecond,
		"released at the first expiry although the connection was refreshed")
	require.Eventually(t, func() bool { return plane.closes.Load() == 1 }, 5*gracePeriod+time.Second, 20*time.Millisecond)
}
