// Package recvnetnstest reaches a chain as nsmgr reaches the forwarder: over gRPC on a unix socket
// with grpcfd, so that namespaces travel as file descriptors beside the calls.
package recvnetnstest
