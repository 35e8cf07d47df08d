package registrylookup_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/networkservicemesh/api/pkg/api/registry"
	registryclient "github.com/networkservicemesh/sdk/pkg/registry/chains/client"
	"github.com/networkservicemesh/sdk/pkg/registry/common/memory"
	"github.com/networkservicemesh/sdk/pkg/registry/common/null"
	"github.com/networkservicemesh/sdk/pkg/registry/common/recvfd"
	"github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"
	"github.com/networkservicemesh/sdk/pkg/registry/core/chain"
	"github.com/networkservicemesh/sdk/pkg/registry/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/registry/registrylookup"
)

const (
	service      = "svc"
	endpointName = "nse-1"
	dialTimeout  = 500 * time.Millisecond
)

// fakeNSMgr is an nsmgr's registry as the forwarder sees it: grpcfd transport, endpoint URLs sent
// as descriptors, and a count of the connections it accepted.
type fakeNSMgr struct {
	socket      string
	endpointURL *url.URL
	connections atomic.Int32
	// sendFaults is how many endpoint answers still fail after their descriptor was queued, as
	// grpcfd's second close fails them in sdk's sendfd; finds counts the endpoint Finds served.
	sendFaults atomic.Int32
	finds      atomic.Int32
	server     *grpc.Server
	served     chan struct{}
}

func startNSMgr(t *testing.T, socket string, endpointURL *url.URL) *fakeNSMgr {
	t.Helper()
	m := &fakeNSMgr{socket: socket, endpointURL: endpointURL, served: make(chan struct{})}
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	m.server = grpc.NewServer(grpc.Creds(recvnetnstest.NSMgrCredentials()), grpc.StatsHandler(connectionCounter{&m.connections}))
	nses := memory.NewNetworkServiceEndpointRegistryServer()
	nss := memory.NewNetworkServiceRegistryServer()
	_, err = nses.Register(context.Background(), &registry.NetworkServiceEndpoint{Name: endpointName, NetworkServiceNames: []string{service}, Url: endpointURL.String()})
	require.NoError(t, err)
	_, err = nss.Register(context.Background(), &registry.NetworkService{Name: service})
	require.NoError(t, err)
	registry.RegisterNetworkServiceEndpointRegistryServer(m.server, chain.NewNetworkServiceEndpointRegistryServer(&sendFaultInjector{m}, sendfd.NewNetworkServiceEndpointRegistryServer(), nses))
	registry.RegisterNetworkServiceRegistryServer(m.server, nss)
	go func() {
		defer close(m.served)
		_ = m.server.Serve(listener)
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *fakeNSMgr) stop() {
	m.server.Stop()
	<-m.served
}

// sendFaultInjector stands in front of sdk's sendfd server and fails an answer the way grpcfd's
// double close does: the descriptor is queued on the connection, the answer is not sent, and the
// Find ends with an error that carries no gRPC code.
type sendFaultInjector struct{ nsmgr *fakeNSMgr }

func (i *sendFaultInjector) Register(ctx context.Context, nse *registry.NetworkServiceEndpoint) (*registry.NetworkServiceEndpoint, error) {
	return next.NetworkServiceEndpointRegistryServer(ctx).Register(ctx, nse)
}

func (i *sendFaultInjector) Find(query *registry.NetworkServiceEndpointQuery, server registry.NetworkServiceEndpointRegistry_FindServer) error {
	i.nsmgr.finds.Add(1)
	return next.NetworkServiceEndpointRegistryServer(server.Context()).Find(query, &faultySend{server, i.nsmgr})
}

func (i *sendFaultInjector) Unregister(ctx context.Context, nse *registry.NetworkServiceEndpoint) (*empty.Empty, error) {
	return next.NetworkServiceEndpointRegistryServer(ctx).Unregister(ctx, nse)
}

type faultySend struct {
	registry.NetworkServiceEndpointRegistry_FindServer
	nsmgr *fakeNSMgr
}

func (s *faultySend) Send(resp *registry.NetworkServiceEndpointResponse) error {
	if s.nsmgr.sendFaults.Add(-1) >= 0 {
		return errors.New("failed to send a file " + s.nsmgr.endpointURL.Path + ", the file probably doesn't exist: close " + s.nsmgr.endpointURL.Path + ": file already closed")
	}
	return s.NetworkServiceEndpointRegistry_FindServer.Send(resp)
}

type connectionCounter struct{ count *atomic.Int32 }

func (c connectionCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (c connectionCounter) HandleRPC(context.Context, stats.RPCStats) {}
func (c connectionCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c connectionCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, begins := s.(*stats.ConnBegin); begins {
		c.count.Add(1)
	}
}

// endpointSocket is a listening unix socket standing for an endpoint's gRPC server: the
// descriptor the nsmgr passes is of it.
func endpointSocket(t *testing.T) *url.URL {
	t.Helper()
	listener, err := net.Listen("unix", filepath.Join(t.TempDir(), "nse.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	return &url.URL{Scheme: "unix", Path: listener.Addr().String()}
}

func newClients(t *testing.T, ctx context.Context, socket string) *registrylookup.Clients {
	t.Helper()
	clients, err := registrylookup.New(ctx, &url.URL{Scheme: "unix", Path: socket},
		registrylookup.WithDialTimeout(dialTimeout),
		registrylookup.WithDialOptions(grpc.WithTransportCredentials(recvnetnstest.ForwarderCredentials()),
			grpcfd.WithChainStreamInterceptor(), grpcfd.WithChainUnaryInterceptor()))
	require.NoError(t, err)
	return clients
}

func findEndpointURL(ctx context.Context, clients *registrylookup.Clients) (string, error) {
	stream, err := clients.NetworkServiceEndpoints.Find(ctx, &registry.NetworkServiceEndpointQuery{
		NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: endpointName},
	})
	if err != nil {
		return "", err
	}
	found := ""
	for {
		resp, recvErr := stream.Recv()
		if errors.Is(recvErr, io.EOF) {
			return found, nil
		}
		if recvErr != nil {
			return "", recvErr
		}
		found = resp.GetNetworkServiceEndpoint().GetUrl()
	}
}

func findService(ctx context.Context, clients *registrylookup.Clients) error {
	stream, err := clients.NetworkServices.Find(ctx, &registry.NetworkServiceQuery{NetworkService: &registry.NetworkService{Name: service}})
	if err != nil {
		return err
	}
	resp, err := stream.Recv()
	if err != nil {
		return err
	}
	if resp.GetNetworkService().GetName() != service {
		return errors.New("found " + resp.GetNetworkService().GetName())
	}
	return nil
}

func TestFindsShareOneConnection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nsmgr := startNSMgr(t, filepath.Join(t.TempDir(), "nsmgr.sock"), endpointSocket(t))
	clients := newClients(t, ctx, nsmgr.socket)
	for range 20 {
		require.NoError(t, findService(ctx, clients))
		_, err := findEndpointURL(ctx, clients)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, nsmgr.connections.Load(), "connections the nsmgr accepted for 40 Finds")
}

// The nsmgr's sendfd fails an answer now and then on a connection that carries other calls
// (grpcfd's double close); the forwarder asks again instead of reading an empty list.
func TestFindTheNSMgrFailedWhilePassingTheDescriptorIsAskedAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nsmgr := startNSMgr(t, filepath.Join(t.TempDir(), "nsmgr.sock"), endpointSocket(t))
	nsmgr.sendFaults.Store(2)
	clients := newClients(t, ctx, nsmgr.socket)
	found, err := findEndpointURL(ctx, clients)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(found, "unix:///proc/"), "endpoint URL %q is not a received descriptor", found)
	require.EqualValues(t, 3, nsmgr.finds.Load(), "endpoint Finds the nsmgr served")
	require.EqualValues(t, 1, nsmgr.connections.Load())
}

// What the package replaces: sdk's registry client, as the stock forwarder discovers with it,
// makes a connection for every Find.
func TestSDKClientDialsForEveryFind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nsmgr := startNSMgr(t, filepath.Join(t.TempDir(), "nsmgr.sock"), endpointSocket(t))
	sdkClient := registryclient.NewNetworkServiceEndpointRegistryClient(ctx,
		registryclient.WithClientURL(&url.URL{Scheme: "unix", Path: nsmgr.socket}),
		registryclient.WithNSEAdditionalFunctionality(recvfd.NewNetworkServiceEndpointRegistryClient(), sendfd.NewNetworkServiceEndpointRegistryClient()),
		registryclient.WithDialTimeout(dialTimeout),
		registryclient.WithDialOptions(grpc.WithTransportCredentials(recvnetnstest.ForwarderCredentials()),
			grpcfd.WithChainStreamInterceptor(), grpcfd.WithChainUnaryInterceptor()),
		registryclient.WithNSEHealClient(null.NewNetworkServiceEndpointRegistryClient()),
		registryclient.WithNSERetryClient(null.NewNetworkServiceEndpointRegistryClient()))
	for range 5 {
		_, err := findEndpointURL(ctx, &registrylookup.Clients{NetworkServiceEndpoints: sdkClient})
		require.NoError(t, err)
	}
	require.EqualValues(t, 5, nsmgr.connections.Load(), "connections the nsmgr accepted for 5 Finds")
}

// The endpoint's URL is a descriptor received from the nsmgr, the same one on every Find, so that
// the connection to the endpoint is made to the same target each time.
func TestEndpointURLIsOneReceivedDescriptorOnEveryFind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	endpoint := endpointSocket(t)
	nsmgr := startNSMgr(t, filepath.Join(t.TempDir(), "nsmgr.sock"), endpoint)
	clients := newClients(t, ctx, nsmgr.socket)
	first, err := findEndpointURL(ctx, clients)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "unix:///proc/"), "endpoint URL %q is not a received descriptor", first)
	for range 5 {
		again, findErr := findEndpointURL(ctx, clients)
		require.NoError(t, findErr)
		require.Equal(t, first, again)
	}
	var received, original unix.Stat_t
	require.NoError(t, unix.Stat(strings.TrimPrefix(first, "unix://"), &received))
	require.NoError(t, unix.Stat(endpoint.Path, &original))
	require.Equal(t, original.Ino, received.Ino, "the received descriptor is not the endpoint's socket")
}

func TestFindFailsWithinTheDialTimeoutWhileTheNSMgrIsAway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients := newClients(t, ctx, filepath.Join(t.TempDir(), "absent.sock"))
	start := time.Now()
	_, err := findEndpointURL(ctx, clients)
	require.ErrorContains(t, err, "can not dial to unix://")
	require.Less(t, time.Since(start), dialTimeout+time.Second)
}

func TestFindReachesARestartedNSMgr(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	socket := filepath.Join(t.TempDir(), "nsmgr.sock")
	endpoint := endpointSocket(t)
	nsmgr := startNSMgr(t, socket, endpoint)
	clients := newClients(t, ctx, socket)
	_, err := findEndpointURL(ctx, clients)
	require.NoError(t, err)

	nsmgr.stop() // which removes the socket
	_, err = findEndpointURL(ctx, clients)
	require.Error(t, err, "a Find with the nsmgr gone")
	// Long enough for gRPC's reconnection attempts to back off to their cap.
	time.Sleep(3 * time.Second)

	restarted := startNSMgr(t, socket, endpoint)
	require.Eventually(t, func() bool {
		_, findErr := findEndpointURL(ctx, clients)
		return findErr == nil
	}, 3*time.Second, 50*time.Millisecond, "no Find reached the restarted nsmgr")
	require.EqualValues(t, 1, restarted.connections.Load())
}

func TestClosesItsConnectionWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	nsmgr := startNSMgr(t, filepath.Join(t.TempDir(), "nsmgr.sock"), endpointSocket(t))
	clients := newClients(t, ctx, nsmgr.socket)
	require.NoError(t, findService(ctx, clients))
	cancel()
	// The connection is closed by context.AfterFunc, in a goroutine of its own: on a busy machine
	// a Find can still start before it runs.
	var err error
	require.Eventually(t, func() bool {
		_, err = findEndpointURL(context.Background(), clients)
		return err != nil
	}, 5*time.Second, 10*time.Millisecond, "a Find still succeeds after the context ended")
	require.Regexp(t, "clos(ed|ing)", err.Error())
}
