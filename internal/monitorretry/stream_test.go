package monitorretry_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/monitorretry"
)

const watchedID = "conn-1"

// scriptedMonitor serves stream number n (from 1) with script(n, selector, server).
type scriptedMonitor struct {
	mu        sync.Mutex
	selectors []*networkservice.MonitorScopeSelector
	script    func(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error
}

func (m *scriptedMonitor) MonitorConnections(selector *networkservice.MonitorScopeSelector, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
	m.mu.Lock()
	m.selectors = append(m.selectors, selector)
	n := len(m.selectors)
	m.mu.Unlock()
	return m.script(n, srv)
}

func (m *scriptedMonitor) streams() []*networkservice.MonitorScopeSelector {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*networkservice.MonitorScopeSelector(nil), m.selectors...)
}

func watchedConnection(state networkservice.State) map[string]*networkservice.Connection {
	return map[string]*networkservice.Connection{watchedID: {
		Id:    watchedID,
		State: state,
		Path:  &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Id: watchedID, Name: "nsmgr"}}},
	}}
}

func initialState(srv networkservice.MonitorConnection_MonitorConnectionsServer, conns map[string]*networkservice.Connection) error {
	return srv.Send(&networkservice.ConnectionEvent{Type: networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER, Connections: conns})
}

var errCut = status.Error(codes.Unavailable, "stream cut by an idle load balancer")

// openMonitor serves m on an in-memory listener and opens a MonitorConnections stream on it.
func openMonitor(ctx context.Context, t *testing.T, m *scriptedMonitor, dialOpts ...grpc.DialOption) (networkservice.MonitorConnection_MonitorConnectionsClient, *grpc.Server) {
	t.Helper()
	listener := bufconn.Listen(1 << 20)
	server := grpc.NewServer()
	networkservice.RegisterMonitorConnectionServer(server, m)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	cc, err := grpc.NewClient("passthrough:///monitor",
		append([]grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }),
		}, dialOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	selector := &networkservice.MonitorScopeSelector{PathSegments: []*networkservice.PathSegment{{Id: watchedID, Name: "nsmgr"}}}
	stream, err := networkservice.NewMonitorConnectionClient(cc).MonitorConnections(ctx, selector)
	require.NoError(t, err)
	return stream, server
}

// cutOnceThenServe sends the initial state and cuts stream 1; later streams send the initial
// state, then one update marking the connection DOWN, then stay open.
func cutOnceThenServe(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
	if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
		return err
	}
	if n == 1 {
		return errCut
	}
	if err := srv.Send(&networkservice.ConnectionEvent{Type: networkservice.ConnectionEventType_UPDATE, Connections: watchedConnection(networkservice.State_DOWN)}); err != nil {
		return err
	}
	<-srv.Context().Done()
	return nil
}

func TestWithoutRetryOneCutEndsTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, _ := openMonitor(ctx, t, &scriptedMonitor{script: cutOnceThenServe})

	_, err := stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "this is the break sdk's monitor turns into DOWN")
}

func TestOneCutIsReestablishedWithTheSameSelector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: cutOnceThenServe}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithWindow(5*time.Second)))

	first, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER, first.GetType())

	again, err := stream.Recv()
	require.NoError(t, err, "the cut must be hidden behind a re-opened stream")
	require.Equal(t, networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER, again.GetType())
	require.Equal(t, networkservice.State_UP, again.GetConnections()[watchedID].GetState())

	update, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, networkservice.State_DOWN, update.GetConnections()[watchedID].GetState(), "events of the new stream must flow")

	selectors := monitor.streams()
	require.Len(t, selectors, 2)
	require.True(t, proto.Equal(selectors[0], selectors[1]), "the re-opened stream must watch the same connection")
}

func TestNextHopDownForTheWholeWindowIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: func(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
		if n == 1 {
			if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
				return err
			}
		}
		return errCut
	}}
	window := 400 * time.Millisecond
	stream, _ := openMonitor(ctx, t, monitor,
		monitorretry.DialOption(monitorretry.WithWindow(window), monitorretry.WithBackoff(20*time.Millisecond, 50*time.Millisecond)))

	_, err := stream.Recv()
	require.NoError(t, err)
	start := time.Now()
	_, err = stream.Recv()
	elapsed := time.Since(start)
	require.Equal(t, codes.Unavailable, status.Code(err), "the original break is passed on once retrying gives up")
	require.GreaterOrEqual(t, elapsed, window/2, "gave up before trying for the window")
	require.Less(t, elapsed, 5*window, "kept retrying long after the window")
	require.Greater(t, len(monitor.streams()), 2, "several re-open attempts expected")
}

// WaitForReady makes re-opening block while the server is gone, as in the forwarder's dials: the
// window must still bound it.
func TestStoppedServerIsReportedDespiteWaitForReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: func(_ int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
		if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
			return err
		}
		<-srv.Context().Done()
		return nil
	}}
	stream, server := openMonitor(ctx, t, monitor,
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		monitorretry.DialOption(monitorretry.WithWindow(300*time.Millisecond)))

	_, err := stream.Recv()
	require.NoError(t, err)
	server.Stop()
	start := time.Now()
	_, err = stream.Recv()
	require.Error(t, err)
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestConnectionForgottenByTheNextHopIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: func(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
		if n == 1 {
			if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
				return err
			}
			return errCut
		}
		if err := initialState(srv, nil); err != nil {
			return err
		}
		<-srv.Context().Done()
		return nil
	}}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithWindow(5*time.Second)))

	_, err := stream.Recv()
	require.NoError(t, err)
	start := time.Now()
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Less(t, time.Since(start), 2*time.Second, "a forgotten connection must be reported at once, not after the window")
	require.Len(t, monitor.streams(), 2)
}

func TestCancelledCallerIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: func(_ int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
		if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
			return err
		}
		<-srv.Context().Done()
		return nil
	}}
	streamCtx, cancelStream := context.WithCancel(ctx)
	stream, _ := openMonitor(streamCtx, t, monitor, monitorretry.DialOption())

	_, err := stream.Recv()
	require.NoError(t, err)
	cancelStream()
	_, err = stream.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))
	require.Len(t, monitor.streams(), 1)
}

func TestZeroWindowTurnsRetryingOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: cutOnceThenServe}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithWindow(0)))

	_, err := stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Len(t, monitor.streams(), 1)
}
