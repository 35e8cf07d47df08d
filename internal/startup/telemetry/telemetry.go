package telemetry

import (
	"context"
	"io"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/opentelemetry"
	"github.com/networkservicemesh/sdk/pkg/tools/prometheus"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
)

// Start starts what the environment enables and returns what flushes the exporters on exit.
// A Prometheus server that cannot bind within NSM_PROMETHEUS_MAX_BIND_THRESHOLD calls abort.
func Start(ctx context.Context, abort context.CancelFunc, cfg *config.Config) io.Closer {
	var closer io.Closer = nothingToFlush{}
	if opentelemetry.IsEnabled() {
		spanExporter := opentelemetry.InitSpanExporter(ctx, cfg.OpenTelemetryEndpoint)
		var metricReader sdkmetric.Reader
		if prometheus.IsEnabled() {
			metricReader = opentelemetry.InitPrometheusMetricExporter(ctx)
		} else {
			metricReader = opentelemetry.InitOPTLMetricExporter(ctx, cfg.OpenTelemetryEndpoint, cfg.MetricsExportInterval)
		}
		closer = opentelemetry.Init(ctx, spanExporter, metricReader, cfg.Name)
		log.FromContext(ctx).Infof("OpenTelemetry exports to %s", cfg.OpenTelemetryEndpoint)
	}
	if prometheus.IsEnabled() {
		server := prometheus.NewServer(cfg.PrometheusListenOn,
			prometheus.WithHeaderTimeout(cfg.PrometheusServerHeaderTimeout),
			prometheus.WithCustomCert(cfg.PrometheusCertFile, cfg.PrometheusKeyFile),
			prometheus.WithCustomCA(cfg.PrometheusCAFile),
			prometheus.WithCertificateMonitoring(cfg.PrometheusMonitorCertificate),
			prometheus.WithMaxBindThreshold(cfg.PrometheusMaxBindThreshold),
		)
		server.ListenAndServe(ctx, abort)
	}
	if cfg.PprofEnabled {
		servePprof(ctx, cfg.PprofListenOn)
	}
	return closer
}

type nothingToFlush struct{}

func (nothingToFlush) Close() error { return nil }
