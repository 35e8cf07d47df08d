// Package server speaks VPP's binary API over its unix socket transport, the way govpp's
// socketclient expects: 16-byte framed messages, the sockclnt_create handshake that hands
// out the message table, control_ping, request/reply and multipart dumps. What a message
// means is left to a Handler; messages it does not implement get their reply type with
// VPP's UNIMPLEMENTED retval, so no client ever waits for nothing.
package server
