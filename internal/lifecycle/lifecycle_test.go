package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/lifecycle"
)

func TestStopUndoesInReverseOrderAndOnlyWhatStarted(t *testing.T) {
	var phases lifecycle.Lifecycle
	var undone []string
	ctx := context.Background()
	for _, name := range []string{"vpp", "endpoint", "server"} {
		require.NoError(t, phases.Run(ctx, name, func() error {
			phases.OnStop(name, time.Second, func(context.Context) error { undone = append(undone, name); return nil })
			return nil
		}))
	}
	err := phases.Run(ctx, "register", func() error { return errors.New("registry unreachable") })
	require.EqualError(t, err, "register: registry unreachable")

	phases.Stop(ctx)
	require.Equal(t, []string{"server", "endpoint", "vpp"}, undone)
}

func TestAStuckStepDoesNotStopTheOthers(t *testing.T) {
	var phases lifecycle.Lifecycle
	var undone []string
	phases.OnStop("release vpp", time.Second, func(context.Context) error { undone = append(undone, "vpp"); return nil })
	phases.OnStop("close connections", 100*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	phases.OnStop("unregister", time.Second, func(context.Context) error { return errors.New("registry gone") })

	start := time.Now()
	phases.Stop(context.Background())
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, []string{"vpp"}, undone)
}

func TestStepsRunEvenWhenTheRootContextIsCancelled(t *testing.T) {
	var phases lifecycle.Lifecycle
	ctx, cancel := context.WithCancel(context.Background())
	var stepErr error
	phases.OnStop("unregister", time.Second, func(stepCtx context.Context) error { stepErr = stepCtx.Err(); return nil })
	cancel()

	phases.Stop(ctx)
	require.NoError(t, stepErr, "a signal cancels the root context; shutdown steps still need a live one")
}
