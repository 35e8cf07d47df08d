package realvpp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// A VPP that misread its clock stops answering new API clients within seconds (the CI failure
// of TestWireguardRequestAndClose: "connecting to vpp ... i/o timeout"); Start runs another.
func TestVPPThatMisreadsItsClockIsStartedAgain(t *testing.T) {
	binary := realvpp.MisclockingBinary(t, realvpp.Require(t), 1)
	vpp := realvpp.StartForTest(t, realvpp.Options{Binary: binary})

	require.Len(t, vpp.Discarded, 1)
	require.True(t, vppclock.Misstarted(vpp.Discarded[0]), "discarded for %v", vpp.Discarded[0])
	// When the misclocked VPP still answered, it told a time hundreds of times fast.
	var clockErr *vppclock.Error
	if errors.As(vpp.Discarded[0], &clockErr) {
		require.Greater(t, clockErr.Rate, 10.0, "a %d µs stall over a 1 ms estimate", realvpp.MisclockingStall)
	}
	require.Equal(t, []string{vpp.Prefix}, ownRuns(t), "the discarded run left nothing behind")
	for range 3 {
		conn, err := govpp.Connect(vpp.APISocket())
		require.NoError(t, err, "a new client is answered")
		conn.Disconnect()
	}
}

func TestVPPThatKeepsMisreadingItsClockIsRefused(t *testing.T) {
	binary := realvpp.MisclockingBinary(t, realvpp.Require(t), 3)

	vpp, err := realvpp.Start(context.Background(), realvpp.Options{Binary: binary})

	require.Nil(t, vpp)
	require.True(t, vppclock.Misstarted(err), "refused for %v", err)
	require.Empty(t, ownRuns(t), "no run is left behind")
}

func ownRuns(t *testing.T) []string {
	t.Helper()
	runs, err := realvpp.OwnRuns()
	require.NoError(t, err)
	return runs
}
