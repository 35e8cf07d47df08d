package realvpp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp"

	"github.com/networkservicemesh/govpp/binapi/vlib"
	"github.com/networkservicemesh/govpp/binapi/vpe"

	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// slowPing waits about 2 s for echoes that never come (no route to TEST-NET-1).
const slowPing = "ping 192.0.2.1 repeat 4 interval 0.5"

// A test pings from a VPP pod's CLI while the pod's NSM client heals through VPP's binary API:
// the client's calls must be answered while the ping waits.
func TestPingThroughTheCLISocketLeavesTheAPIAnswering(t *testing.T) {
	binary := realvpp.Require(t)
	vpp := realvpp.StartForTest(t, realvpp.Options{Binary: binary})
	pinged, callErr := callDuringPing(t, vpp, func(ctx context.Context) (string, error) {
		return realvpp.CLI(ctx, realvpp.Vppctl(binary), vpp.Layout, slowPing)
	})
	require.NoError(t, callErr, "an API call made while the CLI pinged")
	require.Equal(t, 4, strings.Count(pinged, "Failed: no egress interface\n"), "the ping ran its 4 rounds:\n%s", pinged)
}

// Why CLI takes the CLI socket: the same ping through cli_inband runs in VPP's API process,
// whose events it takes, and the API call made meanwhile is never answered.
func TestPingThroughCliInbandDropsAnAPICallMadeMeanwhile(t *testing.T) {
	binary := realvpp.Require(t)
	vpp := realvpp.StartForTest(t, realvpp.Options{Binary: binary})
	conn, err := govpp.Connect(vpp.APISocket())
	require.NoError(t, err)
	defer conn.Disconnect()
	_, callErr := callDuringPing(t, vpp, func(ctx context.Context) (string, error) {
		reply := &vlib.CliInbandReply{}
		err := conn.Invoke(ctx, &vlib.CliInband{Cmd: slowPing}, reply)
		return reply.Reply, err
	})
	require.ErrorIs(t, callErr, context.DeadlineExceeded, "VPP answered an API call made during a cli_inband ping")
}

// callDuringPing starts ping, then, while it waits, makes an API call from a connection of its
// own (another program's) that gets 1 s to be answered. It returns what the ping printed, once
// it has ended, and that call's error.
func callDuringPing(t *testing.T, vpp *realvpp.VPP, ping func(context.Context) (string, error)) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := govpp.Connect(vpp.APISocket())
	require.NoError(t, err)
	defer client.Disconnect()

	type result struct {
		out string
		err error
	}
	pinged := make(chan result, 1)
	pingStarted := time.Now()
	go func() {
		out, err := ping(ctx)
		pinged <- result{out, err}
	}()
	time.Sleep(300 * time.Millisecond)
	callCtx, cancelCall := context.WithTimeout(ctx, time.Second)
	_, callErr := vpe.NewServiceClient(client).ShowVersion(callCtx, &vpe.ShowVersion{})
	cancelCall()
	done := <-pinged
	require.NoError(t, done.err, "the ping:\n%s", done.out)
	t.Logf("the ping took %s; the API call: %v", time.Since(pingStarted).Round(10*time.Millisecond), callErr)
	return done.out, callErr
}
