package xconnect_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func (c *deadRun) close(t *testing.T, b *life) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(clienturlctx.WithClientURL(context.Background(), c.peers.hopURL), 20*time.Second)
	defer cancel()
	_, err := b.forwarder.Close(ctx, c.conn.Clone())
	return err
}

// The Close of a connection the previous run made reaches the restarted forwarder through its
// whole endpoint chain, sdk's begin included, which knows nothing of the connection: the
// connection's data plane and record go at once, not after the grace period.
func TestCloseOfAPreviousRunsConnectionReleasesItAtOnce(t *testing.T) {
	c := connectThenDie(t, "conn-closed-after-restart")
	b := c.restart(t)
	require.Len(t, b.leftovers.Owners(), 1)

	require.NoError(t, c.close(t, b))
	require.Empty(t, b.leftovers.Owners(), "the Close did not release the leftover")
	c.vpp.requireOnlyUplink(t)
	require.Equal(t, []string{"lo"}, linkNamesIn(t, c.peers.nsc.Path()), "the client's interface outlived the Close")
	records, err := journal.Read(c.journalDir)
	require.NoError(t, err)
	require.Empty(t, records, "the closed connection's record outlived the Close")
}

// refusesCloses is an authorization that lets Requests through and refuses every Close.
type refusesCloses struct{}

func (refusesCloses) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(ctx, request)
}

func (refusesCloses) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return nil, status.Error(codes.PermissionDenied, "no sufficient privileges")
}

// A peer the endpoint's authorization refuses cannot release a previous run's connection by
// closing it: the leftover stays, data path and all.
func TestUnauthorizedCloseLeavesThePreviousRunsConnection(t *testing.T) {
	c := connectThenDie(t, "conn-close-refused")
	clientSide := podLink(t, c.peers.nsc.Path(), "nsc-1")
	b := startLife(t, c.vpp, kernelif.Tap, c.journalDir, c.node, xconnect.WithAuthorizeServer(refusesCloses{}))
	owners := b.leftovers.Owners()
	require.Len(t, owners, 1)

	err := c.close(t, b)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Equal(t, owners, b.leftovers.Owners(), "a refused Close released the leftover")
	require.Equal(t, clientSide, podLink(t, c.peers.nsc.Path(), "nsc-1"))
	require.NoError(t, vppsimtest.Ping(c.peers.nsc, nscIP, nseIP, 5*time.Second))
}
