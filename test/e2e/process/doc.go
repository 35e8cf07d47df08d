// Package process runs the harness's long-lived programs (SPIRE, registry,
// nsmgr, forwarder, simulator, endpoint, client), optionally inside a network
// namespace, with their output in a log file whose tail can be shown when a
// scenario fails. Children are killed if the harness itself dies, so a crashed
// test leaves no process behind.
package process
