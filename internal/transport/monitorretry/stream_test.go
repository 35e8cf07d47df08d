package monitorretry_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
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

	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport/grpctransporttest"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/monitorretry"
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

const watchedEndpoint = "nse-1"

func watchedConnection(state networkservice.State) map[string]*networkservice.Connection {
	return map[string]*networkservice.Connection{watchedID: {
		Id:                         watchedID,
		State:                      state,
		NetworkServiceEndpointName: watchedEndpoint,
		Path:                       &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Id: watchedID, Name: "nsmgr"}}},
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
	server := serveMonitor(t, m, listener)
	return monitorThrough(ctx, t, "passthrough:///monitor", append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }),
	}, dialOpts...)...), server
}

func serveMonitor(t *testing.T, m *scriptedMonitor, listener net.Listener) *grpc.Server {
	t.Helper()
	server := grpc.NewServer()
	networkservice.RegisterMonitorConnectionServer(server, m)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return server
}

// monitorThrough opens a MonitorConnections stream for the watched connection on target.
func monitorThrough(ctx context.Context, t *testing.T, target string, dialOpts ...grpc.DialOption) networkservice.MonitorConnection_MonitorConnectionsClient {
	t.Helper()
	cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	selector := &networkservice.MonitorScopeSelector{PathSegments: []*networkservice.PathSegment{{Id: watchedID, Name: "nsmgr"}}}
	stream, err := networkservice.NewMonitorConnectionClient(cc).MonitorConnections(ctx, selector)
	require.NoError(t, err)
	return stream
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

func TestWithoutReopeningOneCutEndsTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, _ := openMonitor(ctx, t, &scriptedMonitor{script: cutOnceThenServe})

	_, err := stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "this is the break sdk's monitor turns into DOWN")
}

// An idle cut while the next hop lives: the re-opened stream's initial state still holds the
// connection UP, so the caller sees it instead of the break, and later events flow.
func TestIdleCutWithALivePeerIsHiddenBehindTheSameSelector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: cutOnceThenServe}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithReopenTimeout(5*time.Second)))

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

// Field report 4 over real TCP: a middlebox drops the idle flow under a silent stream; the peer
// lives and still holds the connection, so nothing reaches the caller but the re-opened stream's
// initial state, through a new flow. The WaitForReady default of the forwarder's dials is on.
func TestIdleCutByAMiddleboxWithALivePeerIsHidden(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: serveSilently}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveMonitor(t, monitor, listener)
	cutter := grpctransporttest.StartIdleCutter(t, listener.Addr().String(), time.Second)
	stream := monitorThrough(ctx, t, "passthrough:///"+cutter.Address,
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		monitorretry.DialOption(monitorretry.WithReopenTimeout(5*time.Second)))

	_, err = stream.Recv()
	require.NoError(t, err)
	again, err := stream.Recv()
	require.NoError(t, err, "the idle cut must be hidden: the peer lives and holds the connection")
	require.Equal(t, networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER, again.GetType())
	require.Equal(t, networkservice.State_UP, again.GetConnections()[watchedID].GetState())
	require.Positive(t, cutter.Cuts(), "the middlebox never cut the flow: the test proves nothing")
	require.Len(t, monitor.streams(), 2)
}

// A next hop SIGKILLed: its unix socket stays but refuses. The break is reported at once, long
// before the re-open timeout, although the dial waits for ready by default.
func TestRefusingPeerIsReportedAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	socket := filepath.Join(t.TempDir(), "nse.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	listener.(*net.UnixListener).SetUnlinkOnClose(false)
	monitor := &scriptedMonitor{script: serveSilently}
	server := serveMonitor(t, monitor, listener)
	stream := monitorThrough(ctx, t, "unix://"+socket,
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		monitorretry.DialOption(monitorretry.WithReopenTimeout(20*time.Second)))

	_, err = stream.Recv()
	require.NoError(t, err)
	server.Stop()
	start := time.Now()
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "the break itself is passed on")
	require.Less(t, time.Since(start), 5*time.Second, "a refusing peer must be reported at once, not after the re-open timeout")
	_, statErr := os.Stat(socket)
	require.NoError(t, statErr, "the socket must stay, as a killed process leaves it")
}

// The peer answers the re-open (a restarted endpoint on the same socket, a next hop that closed
// the connection) but no longer holds the connection, or holds it DOWN: reported at once.
func TestPeerWithoutTheConnectionIsReportedAtOnce(t *testing.T) {
	for name, reopened := range map[string]map[string]*networkservice.Connection{
		"forgotten": nil,
		"down":      watchedConnection(networkservice.State_DOWN),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			monitor := &scriptedMonitor{script: func(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
				if n == 1 {
					if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
						return err
					}
					return errCut
				}
				if err := initialState(srv, reopened); err != nil {
					return err
				}
				<-srv.Context().Done()
				return nil
			}}
			stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithReopenTimeout(20*time.Second)))

			_, err := stream.Recv()
			require.NoError(t, err)
			start := time.Now()
			_, err = stream.Recv()
			require.Equal(t, codes.Unavailable, status.Code(err))
			require.Less(t, time.Since(start), 5*time.Second, "must be reported at once, not after the re-open timeout")
			require.Len(t, monitor.streams(), 2)
		})
	}
}

// The re-open hangs (a peer that accepts but does not answer), and the registry says the watched
// connection's endpoint is gone: reported without waiting for the re-open timeout. The endpoint's
// name is the one the stream's events carried.
func TestUnregisteredEndpointIsReportedAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lookups := make(chan string, 4)
	lookup := func(_ context.Context, name string) (bool, error) {
		lookups <- name
		return false, nil
	}
	stream, _ := openHangingAfterCut(ctx, t, monitorretry.WithReopenTimeout(20*time.Second), monitorretry.WithEndpointLookup(lookup))

	start := time.Now()
	_, err := stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Less(t, time.Since(start), 5*time.Second, "an unregistered endpoint must be reported at once, not after the re-open timeout")
	require.Equal(t, watchedEndpoint, <-lookups)
}

// The same silent peer with the endpoint still registered, or a registry that cannot tell: only
// the re-open timeout ends the wait, and it does.
func TestSilentPeerIsReportedAfterTheReopenTimeout(t *testing.T) {
	for name, lookup := range map[string]monitorretry.EndpointLookup{
		"registered":       func(context.Context, string) (bool, error) { return true, nil },
		"registry failing": func(context.Context, string) (bool, error) { return false, errors.New("registry unreachable") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reopenTimeout := 500 * time.Millisecond
			stream, _ := openHangingAfterCut(ctx, t, monitorretry.WithReopenTimeout(reopenTimeout), monitorretry.WithEndpointLookup(lookup))

			start := time.Now()
			_, err := stream.Recv()
			elapsed := time.Since(start)
			require.Equal(t, codes.Unavailable, status.Code(err))
			require.GreaterOrEqual(t, elapsed, reopenTimeout, "a registered endpoint's peer gets the whole re-open timeout")
			require.Less(t, elapsed, 10*reopenTimeout, "the re-open timeout must bound the wait")
		})
	}
}

// openHangingAfterCut opens a stream whose first instance delivers the watched connection and is
// cut, and whose later instances never answer; it returns after the first event.
func openHangingAfterCut(ctx context.Context, t *testing.T, opts ...monitorretry.Option) (networkservice.MonitorConnection_MonitorConnectionsClient, *scriptedMonitor) {
	t.Helper()
	monitor := &scriptedMonitor{script: func(n int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
		if n == 1 {
			if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
				return err
			}
			return errCut
		}
		<-srv.Context().Done()
		return nil
	}}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(opts...))
	_, err := stream.Recv()
	require.NoError(t, err)
	return stream, monitor
}

// serveSilently sends the initial state and then nothing, as a next hop with a quiet connection.
func serveSilently(_ int, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
	if err := initialState(srv, watchedConnection(networkservice.State_UP)); err != nil {
		return err
	}
	<-srv.Context().Done()
	return nil
}

func TestCancelledCallerIsNotReopened(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: serveSilently}
	streamCtx, cancelStream := context.WithCancel(ctx)
	stream, _ := openMonitor(streamCtx, t, monitor, monitorretry.DialOption())

	_, err := stream.Recv()
	require.NoError(t, err)
	cancelStream()
	_, err = stream.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))
	require.Len(t, monitor.streams(), 1)
}

func TestZeroReopenTimeoutTurnsReopeningOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	monitor := &scriptedMonitor{script: cutOnceThenServe}
	stream, _ := openMonitor(ctx, t, monitor, monitorretry.DialOption(monitorretry.WithReopenTimeout(0)))

	_, err := stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Len(t, monitor.streams(), 1)
}
