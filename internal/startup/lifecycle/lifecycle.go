package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

type stopStep struct {
	name  string
	bound time.Duration
	stop  func(ctx context.Context) error
}

// Lifecycle records the started phases and how to stop them.
type Lifecycle struct {
	phase int
	begun time.Time
	steps []stopStep
}

// Run runs one start-up phase and logs its name and duration. The error names the phase. The log
// lines read as the stock forwarder's ("executing phase N: ... (time since start: ...)", then
// "completed phase N: ..." with a duration field), so operators' searches keep working.
func (l *Lifecycle) Run(ctx context.Context, name string, phase func() error) error {
	if l.begun.IsZero() {
		l.begun = time.Now()
	}
	l.phase++
	logger := log.FromContext(ctx)
	logger.Infof("executing phase %d: %s (time since start: %s)", l.phase, name, l.SinceStart())
	start := time.Now()
	if err := phase(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	logger.WithField("duration", time.Since(start).Round(time.Millisecond)).Infof("completed phase %d: %s", l.phase, name)
	return nil
}

// SinceStart is the time since the first phase began.
func (l *Lifecycle) SinceStart() time.Duration {
	if l.begun.IsZero() {
		return 0
	}
	return time.Since(l.begun).Round(time.Millisecond)
}

// OnStop registers how to undo what was just started; Stop runs the steps last-in first-out.
// The step's context expires after bound.
func (l *Lifecycle) OnStop(name string, bound time.Duration, stop func(ctx context.Context) error) {
	l.steps = append(l.steps, stopStep{name: name, bound: bound, stop: stop})
}

// Stop runs the registered steps in reverse order. A failed or overdue step is logged and the
// next one runs anyway: shutdown must release what it can.
func (l *Lifecycle) Stop(ctx context.Context) {
	logger := log.FromContext(ctx)
	for i := len(l.steps) - 1; i >= 0; i-- {
		step := l.steps[i]
		start := time.Now()
		stepCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), step.bound)
		done := make(chan error, 1)
		go func() { done <- step.stop(stepCtx) }()
		select {
		case err := <-done:
			if err != nil {
				logger.Warnf("shutdown: %s failed after %s: %v", step.name, time.Since(start).Round(time.Millisecond), err)
			} else {
				logger.Infof("shutdown: %s done in %s", step.name, time.Since(start).Round(time.Millisecond))
			}
		case <-stepCtx.Done():
			logger.Warnf("shutdown: %s did not finish within %s", step.name, step.bound)
		}
		cancel()
	}
	l.steps = nil
}
