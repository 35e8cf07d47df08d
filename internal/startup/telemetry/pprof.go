package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// servePprof serves the same profiles as sdk's pprofutils.ListenAndServe, until ctx is done. The
// sdk's server never stops: it starts watching ctx only once its server has returned.
func servePprof(ctx context.Context, listenOn string) {
	log.FromContext(ctx).Infof("Profiler is enabled. Listening on %s", listenOn)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	for _, profile := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
		mux.Handle("/debug/pprof/"+profile, pprof.Handler(profile))
	}
	server := &http.Server{
		Addr:         listenOn,
		Handler:      mux,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.FromContext(ctx).Errorf("Failed to start profiler: %s", err.Error())
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = server.Close()
		case <-stopped:
		}
	}()
}
