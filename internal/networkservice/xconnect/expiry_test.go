package xconnect_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/expiry"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

const clientTokenLifetime = 2 * time.Second

// requestThenDie connects a client whose token expires after clientTokenLifetime and that never
// refreshes, as an OOM-killed client. nsmgr's Request arrives over gRPC (a peer is present, so
// the OPA policies apply) without a deadline (sdk's timeout element would fire that much early).
func requestThenDie(t *testing.T, grace time.Duration) (h *harness, nscNS, nseNS string) {
	t.Helper()
	nscNS, nseNS = newTestNetNS(t), newTestNetNS(t)
	h = newHarness(t, vpptest.Sim, kernelif.Tap, kernelNextHop(nseNS, "nse-1"),
		xconnect.WithAuthorizeServer(authorize.NewServer(authorize.WithPolicies("etc/nsm/opa/common/tokens_expired.rego"))),
		xconnect.WithExpiryOptions(expiry.WithGracePeriod(grace)),
	)
	request := kernelRequest("conn-expiring", nscNS, "nsc-1", payload.IP)
	tok, expires, err := sandbox.GenerateExpiringToken(clientTokenLifetime)(nil)
	require.NoError(t, err)
	request.GetConnection().GetPath().GetPathSegments()[0].Token = tok
	request.GetConnection().GetPath().GetPathSegments()[0].Expires = timestamppb.New(expires)

	_, err = h.nsmgr.Request(h.ctx, request)
	require.NoError(t, err)
	require.NotNil(t, linkIn(t, nscNS, "nsc-1"))
	return h, nscNS, nseNS
}

func TestRefusedExpiryCloseLeaksWithoutTheExpiryElement(t *testing.T) {
	t.Parallel()
	h, nscNS, _ := requestThenDie(t, time.Hour)

	time.Sleep(clientTokenLifetime + time.Second)
	require.Empty(t, sentOfType[*tapv2.TapDeleteV2](h.vpp),
		"sdk's expiry Close got through authorize: the leak of field report 1 does not reproduce")
	require.NotNil(t, linkIn(t, nscNS, "nsc-1"))
}

func TestExpiredConnectionIsReleasedAlthoughItsCloseIsRefused(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	h, nscNS, nseNS := requestThenDie(t, grace)

	require.Eventually(t, func() bool { return len(sentOfType[*tapv2.TapDeleteV2](h.vpp)) == 2 },
		clientTokenLifetime+10*grace, 20*time.Millisecond, "VPP interfaces of the expired connection were not deleted")
	// The release runs in the background: the deletes are counted as VPP receives them, and the
	// taps' kernel ends go once VPP has done them.
	require.Eventually(t, func() bool { return linkIn(t, nscNS, "nsc-1") == nil }, time.Second, 20*time.Millisecond, "client end left behind")
	require.Eventually(t, func() bool { return linkIn(t, nseNS, "nse-1") == nil }, time.Second, 20*time.Millisecond, "endpoint end left behind")
	require.Eventually(t, func() bool { return h.hop.closed() == 1 }, time.Second, 20*time.Millisecond,
		"the next hop was not told")
}
