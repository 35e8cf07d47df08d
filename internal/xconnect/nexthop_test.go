package xconnect_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"
)

// nextHop is the endpoint the forwarder connects onward to. It accepts the first offered mechanism
// of its type, completed by configure, as an NSE or a remote forwarder would.
type nextHop struct {
	mechanismType string
	configure     func(*networkservice.Mechanism)
	// remote serves on loopback TCP instead of a unix socket: the forwarder offers remote
	// mechanisms (vxlan, wireguard, ipsec, vlan) only to a next hop on another node.
	remote bool

	mu     sync.Mutex
	closes []*networkservice.Connection
}

func (h *nextHop) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
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
	server := grpc.NewServer()
	endpoint.NewServer(ctx, sandbox.GenerateTestToken,
		endpoint.WithName("next-hop"),
		endpoint.WithAdditionalFunctionality(h),
	).Register(server)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	if h.remote {
		return &url.URL{Scheme: "tcp", Host: listener.Addr().String()}
	}
	return &url.URL{Scheme: "unix", Path: listener.Addr().String()}
}
