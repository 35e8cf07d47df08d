// Package recvnetnstest reaches a chain as nsmgr reaches the forwarder: over gRPC on a unix socket,
// the chain served with the forwarder's own descriptor-passing transport (fdtransport) and
// reached, as by a stock nsmgr, with grpcfd, so that namespaces travel as file descriptors beside
// the calls.
package recvnetnstest
