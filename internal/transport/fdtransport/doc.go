// Package fdtransport passes file descriptors beside gRPC calls on unix sockets, as grpcfd does,
// and lets go of the descriptors it received once nothing can claim them any more.
//
// grpcfd (github.com/edwarnicke/grpcfd v1.1.4) keeps every descriptor it receives, one per
// (device, inode), until the transport connection closes, and has no way to drop one. nsmgr's
// connection to the forwarder lives as long as both, so every client pod's network namespace that
// ever reached the forwarder stayed open in it, and kept a dead pod's namespace alive in the
// kernel. Yet the transport's copy is only needed between a message's arrival and the call that
// names it claiming a duplicate: sdk's recvfd keeps that duplicate for the connection's life, and
// nsmgr re-sends the descriptor with every Request, refresh and Close.
//
// So a received descriptor is held for a retention period after its last arrival (a re-sent
// duplicate extends it) and then closed; one timer per connection sweeps the expired ones. A
// claim for a descriptor that has not arrived, or no longer is held, waits for it to arrive, as
// in grpcfd, but ends empty after the retention: its call has ended by then, and a descriptor
// handed to an abandoned claim would stay open. Closing the connection closes everything and
// ends every wait empty.
//
// A descriptor is a capability the peer hands over (a pod's namespace, pinned while it is open),
// so none is held before the peer is known: descriptors that arrive before the handshake
// completes are closed at once, and while a TLS handshake runs, reads stay within its records, so
// that a Request sent right behind the handshake keeps its descriptors. After it, a Budget caps
// what is held per peer (its SPIFFE ID) and in total; a descriptor over a cap is closed at once,
// logged and counted (forwarder_vpp_descriptors_refused), and a claim of it ends empty at once,
// so the call that named it fails instead of waiting out the retention.
//
// Peers see grpcfd's wire behaviour: descriptors ride as SCM_RIGHTS on the first byte of the next
// write, and are named by inode://<dev>/<ino> URLs. The connection's RemoteAddr is the connection
// itself and implements grpcfd.FDTransceiver, so grpcfd.FromContext, the sdk's recvfd and sendfd
// elements and grpcfd's client interceptors and PerRPCCredentials work with it unchanged.
//
// Differences from grpcfd besides the retention: pending descriptors travel in one control
// message; descriptors are duplicated close-on-exec (the forwarder starts VPP); a failed write
// fails instead of skipping bytes of the stream; descriptors arriving on a closed connection or
// failing fstat are closed, never dropped; a claim costs no goroutine; a file to send is opened
// and closed once (grpcfd closes it twice and may report the second close as the send's error);
// a successful send is reported a moment after it, never at once (see successReportDelay).
//
// The send path and the handshake wrapper are adapted from grpcfd, Copyright (c) 2020 Cisco and/or
// its affiliates, licensed under the Apache License, Version 2.0.
package fdtransport
