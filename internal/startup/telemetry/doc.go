// Package telemetry starts the optional observability of the forwarder, switched on as in every
// NSM component: OpenTelemetry traces and metrics (TELEMETRY=true), a Prometheus metrics server
// (PROMETHEUS=true) and pprof (NSM_PPROF_ENABLED=true).
package telemetry
