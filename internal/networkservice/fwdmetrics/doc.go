// Package fwdmetrics holds the forwarder's own metrics of recovery and reconciliation: what a
// restart found, adopted and released, what the journal wrote, what the kernel-state elements
// wrote, how monitor-stream breaks ended, and how long Requests and Closes took.
//
// The instruments come from OpenTelemetry's global meter provider, which the sdk's
// opentelemetry.Init sets when TELEMETRY=true (exported over OTLP, or served on /metrics with
// PROMETHEUS=true). Until then, and without it, they record nothing at no cost. docs/operating.md,
// "Metrics", documents each one.
package fwdmetrics
