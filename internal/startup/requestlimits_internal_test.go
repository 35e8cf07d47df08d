package startup

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

// A request bound set in the environment reaches the chain: nsmgr's Request, authorized, is
// refused naming the bound and its variable.
func TestRequestLimitFromTheEnvironmentApplies(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	t.Setenv("NSM_MAX_REQUEST_MECHANISMS", "1")
	f := newSimForwarder(t, domain, netnsPrefix)

	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	var phases lifecycle.Lifecycle
	defer func() { abort(context.Canceled); stopWithin(t, ctx, &phases, 15*time.Second) }()
	require.NoError(t, startIn(ctx, f.node, abort, f.cfg, &phases, ConnectVPP))

	nsmgr := domain.Issue("/nsmgr")
	forwarder := client.NewClient(ctx,
		client.WithName("nsmgr"),
		client.WithClientURL(&url.URL{Scheme: "unix", Path: f.listenSocket}),
		client.WithDialOptions(grpctransport.DialOptions(nsmgr, grpctransport.TokenGenerator(nsmgr, time.Minute), grpctransport.DefaultKeepalive)...),
		client.WithDialTimeout(5*time.Second),
		client.WithoutRefresh(),
	)
	vxlan := &networkservice.Mechanism{Cls: cls.REMOTE, Type: vxlanmech.MECHANISM, Parameters: map[string]string{}}
	requestCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := forwarder.Request(requestCtx, &networkservice.NetworkServiceRequest{
		Connection:           &networkservice.Connection{Id: "conn-limited", NetworkService: "ns"},
		MechanismPreferences: []*networkservice.Mechanism{vxlan, vxlan.Clone()},
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "mechanismPreferences has 2 entries, more than the bound of 1 (NSM_MAX_REQUEST_MECHANISMS)")
}
