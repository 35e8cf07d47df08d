package startup

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A broken VPP API connection stops the forwarder, so that its restart reconnects; a connection
// closed on shutdown does not.
func TestLostVPPConnectionStopsTheForwarder(t *testing.T) {
	ctx, abort := context.WithCancelCause(context.Background())
	lost := make(chan error, 1)
	lost <- syscall.EPIPE
	abortWhenVPPLost(lost, abort)
	require.ErrorIs(t, context.Cause(ctx), syscall.EPIPE)
	require.ErrorContains(t, context.Cause(ctx), "VPP API connection lost")

	ctx, abort = context.WithCancelCause(context.Background())
	closed := make(chan error)
	close(closed)
	abortWhenVPPLost(closed, abort)
	require.NoError(t, ctx.Err())
	abort(errors.New("test over"))
}
