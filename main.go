// Command forwarder-vpp is a Network Service Mesh forwarder that drives VPP through govpp: a
// drop-in for the stock cmd-forwarder-vpp (same NSM_* variables), minus SR-IOV.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	nested "github.com/antonfisher/nested-logrus-formatter"
	"github.com/sirupsen/logrus"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"

	"github.com/nsmfwd/forwarder-vpp/internal/startup"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
)

const (
	exitCodeFailure  = 1
	exitCodeBadUsage = 2
)

func main() {
	os.Exit(run())
}

func run() int {
	if exitCode, done := handleFlags(os.Args[1:]); done {
		return exitCode
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "forwarder-vpp: %v\n", err)
		return exitCodeFailure
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stopSignals()
	ctx, abort := context.WithCancelCause(ctx)
	ctx = withLogger(ctx, cfg)
	logger := log.FromContext(ctx)
	logger.Infof("forwarder-vpp %s, configuration: %s", version, cfg)

	var phases lifecycle.Lifecycle
	failure := startup.Start(ctx, abort, cfg, &phases, startup.ConnectVPP)
	if failure == nil {
		<-ctx.Done()
		failure = context.Cause(ctx)
	}
	phases.Stop(ctx)
	// A signal cancels ctx with context.Canceled as its cause; every other cause is a failure.
	if signalled := errors.Is(context.Cause(ctx), context.Canceled); failure != nil && !signalled {
		logger.Errorf("forwarder-vpp stopped: %v", failure)
		return exitCodeFailure
	}
	logger.Info("forwarder-vpp stopped")
	return 0
}

func withLogger(ctx context.Context, cfg *config.Config) context.Context {
	logrus.SetFormatter(&nested.Formatter{})
	level, _ := logrus.ParseLevel(cfg.LogLevel) // validated by config.Load
	logrus.SetLevel(level)
	// The sdk's chain tracing decides per message from the log level; with tracing off its
	// DEBUG path dereferences a tracer it never built, so it stays on as in the stock commands.
	log.EnableTracing(true)
	ctx = log.WithLog(ctx, logruslogger.New(ctx, map[string]interface{}{"cmd": "forwarder-vpp"}))
	// As the stock forwarder: SIGUSR1 switches to TRACE, SIGUSR2 back to the configured level.
	logruslogger.SetupLevelChangeOnSignal(ctx, map[os.Signal]logrus.Level{syscall.SIGUSR1: logrus.TraceLevel, syscall.SIGUSR2: level})
	return ctx
}
