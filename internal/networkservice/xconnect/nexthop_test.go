package xconnect_test

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
	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// nextHop is the endpoint the forwarder connects onward to. It accepts the first offered mechanism
// of its type, completed by configure, as an NSE or a remote forwarder would.
type nextHop struct {
	mechanismType string
	configure     func(*networkservice.Mechanism)
	// remote serves on loopback TCP instead of a unix socket: the forwarder offers remote
	// mechanisms (vxlan, wireguard, ipsec, vlan) only to a next hop on another node.
	remote bool
	// cutMonitorStreams is how many MonitorConnections streams, from the first, are cut after
	// monitorCutDelay without an event, as an idle load balancer does.
	cutMonitorStreams int32
	monitorCutDelay   time.Duration
	monitorStreams    atomic.Int32
	requests          atomic.Int32
	// failAnswers is how many Requests, from the first, the next hop fails after answering them,
	// as an endpoint whose sendfd could not send its namespace back does.
	failAnswers atomic.Int32

	// kill stops serving as a SIGKILL does: open streams break and the socket stays, refusing.
	kill func()

	mu     sync.Mutex
	closes []*networkservice.Connection
}

func (h *nextHop) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	h.requests.Add(1)
	for _, offered := range request.GetMechanismPreferences() {
		if offered.GetType() != h.mechanismType {
			continue
		}
		chosen := offered.Clone()
		if chosen.Parameters == nil {
			chosen.Parameters = map[string]string{}
		}
		h.configure(chosen)
		request.GetConnection().Mechanism = chosen
		return next.Server(ctx).Request(ctx, request)
	}
	return nil, errors.Errorf("next hop: no %s mechanism among %v", h.mechanismType, request.GetMechanismPreferences())
}

func (h *nextHop) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	h.mu.Lock()
	h.closes = append(h.closes, conn.Clone())
	h.mu.Unlock()
	return next.Server(ctx).Close(ctx, conn)
}

func (h *nextHop) closed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.closes)
}

// serve runs the next hop and returns its URL.
func (h *nextHop) serve(ctx context.Context, t *testing.T) *url.URL {
	t.Helper()
	listener, err := net.Listen("unix", filepath.Join(t.TempDir(), "next-hop.sock"))
	if h.remote {
		listener, err = net.Listen("tcp", "127.0.0.1:0")
	}
	require.NoError(t, err)
	if unixListener, ok := listener.(*net.UnixListener); ok {
		unixListener.SetUnlinkOnClose(false)
	}
	// Not grpcfd: its SendFilename closes the file twice and now and then reports the second
	// close as the send's error, failing the next hop's answer at random (see internal/transport/fdtransport).
	// A failed answer is tested on purpose, with failAnswers.
	server := grpc.NewServer(grpc.Creds(fdtransport.TransportCredentials(insecure.NewCredentials())))
	ep := endpoint.NewServer(ctx, sandbox.GenerateTestToken,
		endpoint.WithName("next-hop"),
		endpoint.WithAdditionalFunctionality(recvfd.NewServer(), &answerFailer{hop: h}, sendfd.NewServer(), h),
	)
	networkservice.RegisterNetworkServiceServer(server, ep)
	networkservice.RegisterMonitorConnectionServer(server, &cuttingMonitor{MonitorConnectionServer: ep, hop: h})
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	h.kill = server.Stop
	if h.remote {
		return &url.URL{Scheme: "tcp", Host: listener.Addr().String()}
	}
	return &url.URL{Scheme: "unix", Path: listener.Addr().String()}
}

type cuttingMonitor struct {
	networkservice.MonitorConnectionServer
	hop *nextHop
}

func (m *cuttingMonitor) MonitorConnections(selector *networkservice.MonitorScopeSelector, srv networkservice.MonitorConnection_MonitorConnectionsServer) error {
	if m.hop.monitorStreams.Add(1) > m.hop.cutMonitorStreams {
		return m.MonitorConnectionServer.MonitorConnections(selector, srv)
	}
	select {
	case <-srv.Context().Done():
		return nil
	case <-time.After(m.hop.monitorCutDelay):
		return status.Error(codes.Unavailable, "idle stream cut")
	}
}

type answerFailer struct {
	hop *nextHop
}

func (f *answerFailer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err == nil && f.hop.failAnswers.Add(-1) >= 0 {
		// As sdk's sendfd server fails: the rest of the endpoint keeps what it set up.
		return nil, errors.New("next hop: answer failed on its way back")
	}
	return conn, err
}

func (f *answerFailer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
