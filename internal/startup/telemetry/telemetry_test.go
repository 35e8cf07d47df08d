package telemetry_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/telemetry"
)

func freeAddress(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close())
	return address
}

func TestPprofServesWhenEnabled(t *testing.T) {
	t.Setenv("TELEMETRY", "false")
	t.Setenv("PROMETHEUS", "false")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	address := freeAddress(t)

	closer := telemetry.Start(ctx, cancel, &config.Config{Name: "forwarder", PprofEnabled: true, PprofListenOn: address})
	defer func() { require.NoError(t, closer.Close()) }()

	require.Eventually(t, func() bool {
		response, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/", address))
		if err != nil {
			return false
		}
		_ = response.Body.Close()
		return response.StatusCode == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond)
}

// The profiler stops with the forwarder's context: sdk's would serve on, and leak.
func TestPprofStopsWithItsContext(t *testing.T) {
	t.Setenv("TELEMETRY", "false")
	t.Setenv("PROMETHEUS", "false")
	ctx, cancel := context.WithCancel(context.Background())
	address := freeAddress(t)
	closer := telemetry.Start(ctx, cancel, &config.Config{Name: "forwarder", PprofEnabled: true, PprofListenOn: address})
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", address, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)

	cancel()
	require.NoError(t, closer.Close())
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", address, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	}, 5*time.Second, 50*time.Millisecond, "the profiler outlived its context")
}

func TestNothingListensWhenDisabled(t *testing.T) {
	t.Setenv("TELEMETRY", "false")
	t.Setenv("PROMETHEUS", "false")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	address := freeAddress(t)

	closer := telemetry.Start(ctx, cancel, &config.Config{Name: "forwarder", PprofListenOn: address, PrometheusListenOn: address})
	require.NoError(t, closer.Close())
	time.Sleep(100 * time.Millisecond)
	_, err := net.DialTimeout("tcp", address, 200*time.Millisecond)
	require.Error(t, err)
}

// The sdk registers /metrics on the process-wide mux, so one test per process starts the server:
// it runs with the shipped defaults, which must give plain HTTP as the stock forwarder's do (a
// default certificate path would turn TLS on with no certificate, and every scrape would fail).
func TestPrometheusServesMetricsWhenEnabled(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NSM_") {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}
	t.Setenv("TELEMETRY", "false")
	t.Setenv("PROMETHEUS", "true")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	address := freeAddress(t)
	t.Setenv("NSM_PROMETHEUS_LISTEN_ON", address)
	cfg, err := config.Load()
	require.NoError(t, err)

	closer := telemetry.Start(ctx, cancel, cfg)
	defer func() { require.NoError(t, closer.Close()) }()

	require.Eventually(t, func() bool {
		response, err := http.Get(fmt.Sprintf("http://%s/metrics", address))
		if err != nil {
			return false
		}
		_ = response.Body.Close()
		return response.StatusCode == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond)
}
