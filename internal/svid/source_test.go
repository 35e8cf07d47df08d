package svid_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/svid"
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
