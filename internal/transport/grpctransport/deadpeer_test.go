package grpctransport_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

// A next hop is SIGKILLed: its unix socket stays but refuses. The sdk's dial element dials it
// again to pass the Close on (and, before a Request, whenever the next hop's URL changed, as when
// an endpoint restarts). The refused dial ends the Close at once, long before the dial timeout;
// with a non-blocking dial the Close waited for the dead peer until the caller's deadline, and the
// caller is a heal.
func TestCloseThroughARefusingNextHopEndsAtOnce(t *testing.T) {
	dialTimeout := 5 * time.Second
	onward, callCtx, conn, nextHop := connectOnward(t, dialTimeout)
	nextHop.Stop()

	require.Less(t, closeDuration(t, onward, callCtx, conn), dialTimeout/2,
		"the Close waited for a next hop that refuses")
}

// A next hop that accepts connections but never answers (a hung process, a black hole): the dial
// timeout bounds the Close.
func TestCloseThroughASilentNextHopEndsWithTheDialTimeout(t *testing.T) {
	dialTimeout := 750 * time.Millisecond // NSM_DIAL_TIMEOUT's default
	onward, callCtx, conn, nextHop := connectOnward(t, dialTimeout)
	socket := clienturlctx.ClientURL(callCtx).Path
	nextHop.Stop()
	require.NoError(t, os.Remove(socket))
	silent, err := net.Listen("unix", socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })

	require.Less(t, closeDuration(t, onward, callCtx, conn), 10*dialTimeout,
		"the Close waited for a silent next hop beyond the dial timeout")
}

// connectOnward serves an endpoint on a unix socket with the forwarder's server options, and
// connects to it through an sdk client with the forwarder's dial options, as the forwarder's
// onward half does. The endpoint's socket stays when it stops, as a killed process leaves it.
func connectOnward(t *testing.T, dialTimeout time.Duration) (networkservice.NetworkServiceClient, context.Context, *networkservice.Connection, *grpc.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	forwarder, nse := domain.Issue("/forwarder"), domain.Issue("/nse")

	socket := filepath.Join(t.TempDir(), "nse.sock")
	listener, err := net.Listen("unix", socket)
	require.NoError(t, err)
	listener.(*net.UnixListener).SetUnlinkOnClose(false)
	server := grpc.NewServer(grpctransport.ServerOptions(nse, grpctransport.DefaultKeepalive)...)
	endpoint.NewServer(ctx, grpctransport.TokenGenerator(nse, time.Minute), endpoint.WithName("nse")).Register(server)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	onward := client.NewClient(ctx,
		client.WithName("forwarder"),
		client.WithoutRefresh(),
		client.WithDialOptions(grpctransport.DialOptions(forwarder, grpctransport.TokenGenerator(forwarder, time.Minute), grpctransport.DefaultKeepalive)...),
		client.WithDialTimeout(dialTimeout))
	callCtx := clienturlctx.WithClientURL(ctx, &url.URL{Scheme: "unix", Path: socket})
	conn, err := onward.Request(callCtx, &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{Id: "conn-1", NetworkService: "ns"},
	})
	require.NoError(t, err)
	return onward, callCtx, conn, server
}

// closeDuration closes conn with a generous deadline and returns how long the Close took.
func closeDuration(t *testing.T, onward networkservice.NetworkServiceClient, callCtx context.Context, conn *networkservice.Connection) time.Duration {
	t.Helper()
	closeCtx, cancel := context.WithTimeout(callCtx, 30*time.Second)
	defer cancel()
	start := time.Now()
	_, _ = onward.Close(closeCtx, conn)
	return time.Since(start)
}
