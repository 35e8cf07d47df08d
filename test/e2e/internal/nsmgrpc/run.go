package nsmgrpc

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"
)

// Policies are the OPA policy sets the stock NSM commands load by default.
var (
	ServerPolicies         = []string{"etc/nsm/opa/common/.*.rego", "etc/nsm/opa/server/.*.rego"}
	MonitorPolicies        = []string{"etc/nsm/opa/common/.*.rego", "etc/nsm/opa/monitor/.*.rego"}
	RegistryPolicies       = []string{"etc/nsm/opa/common/.*.rego", "etc/nsm/opa/registry/.*.rego", "etc/nsm/opa/server/.*.rego"}
	RegistryClientPolicies = []string{"etc/nsm/opa/common/.*.rego", "etc/nsm/opa/registry/.*.rego", "etc/nsm/opa/client/.*.rego"}
)

// signalContext ends on SIGINT or SIGTERM and carries a logrus logger at level.
func signalContext(name, level string) (context.Context, context.CancelFunc, error) {
	parsed, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid log level %q: %w", level, err)
	}
	logrus.SetLevel(parsed)
	// As in the stock commands: the sdk's chain tracer runs at DEBUG and
	// above and needs tracing enabled to have somewhere to keep its state.
	log.EnableTracing(true)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx = log.WithLog(ctx, logruslogger.New(ctx, map[string]interface{}{"cmd": name}))
	return ctx, cancel, nil
}

// Serve listens on every URL and reports the first listening or serving
// error on the returned channel; servers stop when ctx ends.
func Serve(ctx context.Context, server *grpc.Server, urls ...url.URL) <-chan error {
	errCh := make(chan error, len(urls))
	for i := range urls {
		u := urls[i]
		srvErrCh := grpcutils.ListenAndServe(ctx, &u, server)
		go func() {
			if err, ok := <-srvErrCh; ok && err != nil {
				errCh <- fmt.Errorf("serve on %s: %w", u.String(), err)
			}
		}()
	}
	return errCh
}
