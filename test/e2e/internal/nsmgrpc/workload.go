package nsmgrpc

import (
	"context"
	"fmt"
	"time"

	"github.com/spiffe/go-spiffe/v2/workloadapi"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk/pkg/tools/token"
)

// Settings are what every harness command reads beside its own settings (embed it in the
// command's envconfig struct): how it logs, and how it gets and uses its identity.
type Settings struct {
	MaxTokenLifetime time.Duration `default:"10m" split_words:"true"`
	SVIDTimeout      time.Duration `default:"30s" envconfig:"SVID_TIMEOUT"`
	LogLevel         string        `default:"INFO" split_words:"true"`
}

// Workload is a harness command's SPIFFE identity: its X.509 SVID and the tokens signed with it.
type Workload struct {
	Source   *workloadapi.X509Source
	Generate token.GeneratorFunc
}

// Start is how every harness command begins: a context that ends on SIGINT or SIGTERM and logs
// as name, and the command's identity from the workload API. stop releases both; the identity
// stays valid after the signal, for what a command closes then.
func Start(name string, settings Settings) (ctx context.Context, workload *Workload, stop func(), err error) {
	ctx, cancel, err := signalContext(name, settings.LogLevel)
	if err != nil {
		return nil, nil, nil, err
	}
	source, err := newSource(ctx, settings.SVIDTimeout)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	stop = func() {
		_ = source.Close()
		cancel()
	}
	return ctx, &Workload{Source: source, Generate: tokenGenerator(source, settings.MaxTokenLifetime)}, stop, nil
}

// ServerOptions are the options of every harness gRPC server.
func (w *Workload) ServerOptions() []grpc.ServerOption {
	return serverOptions(w.Source)
}

// DialOptions are the options of the harness's gRPC clients but nsmgr's (dialOptions).
func (w *Workload) DialOptions() []grpc.DialOption {
	return dialOptions(w.Source, w.Generate)
}

// NsmgrDialOptions are the nsmgr's (nsmgrDialOptions).
func (w *Workload) NsmgrDialOptions() []grpc.DialOption {
	return nsmgrDialOptions(w.Source, w.Generate)
}

// ServeUntilSignal waits for ctx's signal or a serving error, then withdraws the registration;
// it returns the first of the two errors.
func ServeUntilSignal(ctx context.Context, serveErr <-chan error, name string, unregister func() error) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	if unregisterErr := unregister(); unregisterErr != nil && err == nil {
		err = fmt.Errorf("unregister %s: %w", name, unregisterErr)
	}
	return err
}
