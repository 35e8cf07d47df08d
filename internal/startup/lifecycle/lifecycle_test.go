package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	logrus "github.com/sirupsen/logrus"
	logrustest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
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

// Operators grep the stock forwarder's phase lines; ours read the same.
func TestPhasesAreLoggedAsTheStockForwarderLogsThem(t *testing.T) {
	hook := new(logrustest.Hook)
	logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{})
	logrus.AddHook(hook)
	ctx := log.WithLog(context.Background(), logruslogger.New(context.Background()))
	t.Cleanup(func() { logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{}) })

	var phases lifecycle.Lifecycle
	require.NoError(t, phases.Run(ctx, "connect to VPP", func() error { time.Sleep(20 * time.Millisecond); return nil }))
	require.NoError(t, phases.Run(ctx, "serve", func() error { return nil }))

	var messages []string
	var durations []any
	for _, entry := range hook.AllEntries() {
		messages = append(messages, entry.Message)
		if d, ok := entry.Data["duration"]; ok {
			durations = append(durations, d)
		}
	}
	require.Len(t, messages, 4, messages)
	require.Equal(t, "executing phase 1: connect to VPP (time since start: 0s)", messages[0])
	require.Equal(t, "completed phase 1: connect to VPP", messages[1])
	require.Regexp(t, `^executing phase 2: serve \(time since start: [1-9][0-9]*ms\)$`, messages[2])
	require.Equal(t, "completed phase 2: serve", messages[3])
	require.Len(t, durations, 2, "each completed phase carries its duration")
	require.GreaterOrEqual(t, durations[0].(time.Duration), 20*time.Millisecond)
}
