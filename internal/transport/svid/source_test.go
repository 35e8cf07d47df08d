package svid_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

func TestNoWorkloadAPIAddressSaysWhatIsMissing(t *testing.T) {
	t.Setenv(svid.EndpointSocketEnv, "")
	_, err := svid.Fetch(context.Background(), time.Second)
	require.ErrorContains(t, err, "SPIFFE_ENDPOINT_SOCKET is not set")
}

func TestSilentWorkloadAPIFailsWithinTheBound(t *testing.T) {
	address := "unix://" + filepath.Join(t.TempDir(), "agent.sock")
	t.Setenv(svid.EndpointSocketEnv, address)

	start := time.Now()
	_, err := svid.Fetch(context.Background(), 500*time.Millisecond)
	require.Less(t, time.Since(start), 3*time.Second)
	require.ErrorContains(t, err, "no X.509 SVID from the workload API at "+address+" within 500ms")
	require.ErrorContains(t, err, "spire agent")
}

func TestFetchReturnsTheAgentsSVID(t *testing.T) {
	identity := svidtest.NewTrustDomain(t, "test.nsm").Issue("/ns/nsm-system/sa/forwarder")
	t.Setenv(svid.EndpointSocketEnv, svidtest.ServeWorkloadAPI(t, identity))

	source, err := svid.Fetch(context.Background(), 5*time.Second)
	require.NoError(t, err)
	defer func() { _ = source.Close() }()
	fetched, err := source.GetX509SVID()
	require.NoError(t, err)
	require.Equal(t, "spiffe://test.nsm/ns/nsm-system/sa/forwarder", fetched.ID.String())
}
