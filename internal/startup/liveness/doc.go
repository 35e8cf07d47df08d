// Package liveness is the check behind the DaemonSet's liveness probe: it tells whether the
// forwarder's gRPC server still answers, without asking the SPIRE agent for anything, so that an
// agent outage cannot get a working forwarder (and the node's data plane) restarted.
package liveness
