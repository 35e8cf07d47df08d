package nexthopconn_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/begin"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/connect"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/nexthopconn"
)

const dialTimeout = time.Second

// nextHop is a next hop's gRPC server: it counts the connections it accepted and ended, and the
// Requests and Closes it served.
type nextHop struct {
	url              *url.URL
	accepted, ended  atomic.Int32
	requests, closes atomic.Int32
	refuse           atomic.Bool
	server           *grpc.Server
	served           chan struct{}
	stopOnce         sync.Once
}

func startNextHop(t *testing.T, socket string) *nextHop {
	t.Helper()
	h := &nextHop{url: &url.URL{Scheme: "unix", Path: socket}, served: make(chan struct{})}
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	h.server = grpc.NewServer(grpc.StatsHandler(connectionCounter{h}))
	networkservice.RegisterNetworkServiceServer(h.server, h)
	go func() {
		defer close(h.served)
		_ = h.server.Serve(listener)
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *nextHop) stop() {
	h.stopOnce.Do(func() {
		h.server.Stop()
		<-h.served
	})
}

func (h *nextHop) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	h.requests.Add(1)
	if h.refuse.Load() {
		return nil, context.DeadlineExceeded
	}
	return request.GetConnection(), nil
}

func (h *nextHop) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	h.closes.Add(1)
	return new(empty.Empty), nil
}

type connectionCounter struct{ h *nextHop }

func (c connectionCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (c connectionCounter) HandleRPC(context.Context, stats.RPCStats) {}
func (c connectionCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c connectionCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	switch s.(type) {
	case *stats.ConnBegin:
		c.h.accepted.Add(1)
	case *stats.ConnEnd:
		c.h.ended.Add(1)
	}
}

// onwardClient is the part of the forwarder's onward chain the element works in.
func onwardClient(ctx context.Context) networkservice.NetworkServiceClient {
	return chain.NewNetworkServiceClient(
		begin.NewClient(),
		metadata.NewClient(),
		nexthopconn.NewClient(ctx,
			nexthopconn.WithDialTimeout(dialTimeout),
			nexthopconn.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithBlock(), grpc.FailOnNonTempDialError(true))),
		connect.NewClient(),
	)
}

func request(ctx context.Context, client networkservice.NetworkServiceClient, to *nextHop) error {
	_, err := client.Request(clienturlctx.WithClientURL(ctx, to.url), &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{Id: "conn-1", NetworkService: "svc"},
	})
	return err
}

func socketIn(t *testing.T) string {
	return filepath.Join(t.TempDir(), "next-hop.sock")
}

func TestRefreshesUseTheFirstRequestsConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hop := startNextHop(t, socketIn(t))
	client := onwardClient(ctx)
	for range 5 {
		require.NoError(t, request(ctx, client, hop))
	}
	require.EqualValues(t, 5, hop.requests.Load())
	require.EqualValues(t, 1, hop.accepted.Load(), "connections for 5 Requests")
}

func TestAnotherNextHopClosesThePathThroughTheOldOne(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	oldHop, newHop := startNextHop(t, socketIn(t)), startNextHop(t, socketIn(t))
	client := onwardClient(ctx)
	require.NoError(t, request(ctx, client, oldHop))
	require.NoError(t, request(ctx, client, newHop))
	require.EqualValues(t, 1, oldHop.closes.Load(), "Closes on the old next hop")
	require.EqualValues(t, 1, newHop.requests.Load())
	require.Eventually(t, func() bool { return oldHop.ended.Load() == oldHop.accepted.Load() }, time.Second, 10*time.Millisecond,
		"the old next hop's connection stays open")
}

func TestARestartedNextHopIsDialledAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	socket := socketIn(t)
	first := startNextHop(t, socket)
	client := onwardClient(ctx)
	require.NoError(t, request(ctx, client, first))
	first.stop() // which removes the socket
	restarted := startNextHop(t, socket)
	require.Eventually(t, func() bool { return request(ctx, client, restarted) == nil }, 3*time.Second, 50*time.Millisecond)
	require.EqualValues(t, 1, restarted.accepted.Load())
}

func TestCloseEndsTheConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hop := startNextHop(t, socketIn(t))
	client := onwardClient(ctx)
	require.NoError(t, request(ctx, client, hop))
	_, err := client.Close(clienturlctx.WithClientURL(ctx, hop.url), &networkservice.Connection{Id: "conn-1", NetworkService: "svc"})
	require.NoError(t, err)
	require.EqualValues(t, 1, hop.closes.Load())
	require.EqualValues(t, 1, hop.accepted.Load(), "Close dialled again")
	require.Eventually(t, func() bool { return hop.ended.Load() == 1 }, time.Second, 10*time.Millisecond, "the connection stays open after Close")
}

func TestAFailedFirstRequestLeavesNoConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hop := startNextHop(t, socketIn(t))
	hop.refuse.Store(true)
	client := onwardClient(ctx)
	require.Error(t, request(ctx, client, hop))
	require.Eventually(t, func() bool { return hop.ended.Load() == hop.accepted.Load() }, time.Second, 10*time.Millisecond,
		"the failed first Request's connection stays open")
}

func TestTheChainContextClosesTheConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	hop := startNextHop(t, socketIn(t))
	client := onwardClient(ctx)
	require.NoError(t, request(ctx, client, hop))
	cancel()
	require.Eventually(t, func() bool { return hop.ended.Load() == 1 }, time.Second, 10*time.Millisecond)
}
