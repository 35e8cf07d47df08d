package grpctransport_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/svid/svidtest"
)

// stockDialTimeout is NSM_DIAL_TIMEOUT's default.
const stockDialTimeout = 750 * time.Millisecond

// A next hop is SIGKILLed: its unix socket stays but refuses. The sdk's dial element dials it
// again to pass the Close on (and, before a Request, whenever the next hop's URL changed, as when
// an endpoint restarts). With the forwarder's dial options that dial gives up within the dial
// timeout, as the stock forwarder's does, instead of leaving the Close to wait for the dead peer
// until the caller's deadline: the caller is a heal, and it waits on us.
func TestCloseThroughADeadNextHopEndsWithinTheDialTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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

	tokens := grpctransport.TokenGenerator(forwarder, time.Minute)
	onward := client.NewClient(ctx,
		client.WithName("forwarder"),
		client.WithoutRefresh(),
		client.WithDialOptions(grpctransport.DialOptions(forwarder, tokens, grpctransport.DefaultKeepalive)...),
		client.WithDialTimeout(stockDialTimeout))
	callCtx := clienturlctx.WithClientURL(ctx, &url.URL{Scheme: "unix", Path: socket})
	conn, err := onward.Request(callCtx, &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{Id: "conn-1", NetworkService: "ns"},
	})
	require.NoError(t, err)

	server.Stop()
	closeCtx, cancelClose := context.WithTimeout(callCtx, 30*time.Second)
	defer cancelClose()
	start := time.Now()
	_, _ = onward.Close(closeCtx, conn)
	require.Less(t, time.Since(start), 10*stockDialTimeout,
		"the Close waited for the dead next hop instead of giving up with the dial")
}
