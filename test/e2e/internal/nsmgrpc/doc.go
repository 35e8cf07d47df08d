// Package nsmgrpc holds what every harness command needs to speak NSM's gRPC:
// an X.509 source from the SPIFFE workload API, mTLS server and dial options
// wrapped by grpcfd (so network-namespace file descriptors travel over unix
// sockets), and per-RPC JWT tokens signed with the workload's SVID.
package nsmgrpc
