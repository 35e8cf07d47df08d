// Package grpctransport builds the gRPC options of every connection the forwarder makes or
// accepts: SPIFFE mTLS, file-descriptor passing for unix sockets (package fdtransport, on grpcfd's
// wire format), per-call tokens, and keepalive on both ends so that idle control-plane streams
// survive middleboxes (field report 4).
package grpctransport
