// Package xconnect composes the forwarder's NSM endpoint: the server chain that accepts a
// connection from nsmgr, programs VPP and the client's kernel namespace, and the client chain
// that connects onward to the next hop (an endpoint, or the forwarder on the remote node).
//
// The composition follows sdk-vpp's chains/forwarder element for element, with these
// differences:
//   - the kernel mechanism is tap or veth + af-packet as kernelif.Kind says, on both halves,
//     instead of sdk-vpp's choice by /dev/vhost-net alone;
//   - the kernel IP-context elements are spelled out (kernelcontext.go) so that policy routing is
//     one line, the place for this project's own policy-route element;
//   - expiry releases the data plane of a connection that expired without a Close getting
//     through authorize (field report 1);
//   - requestcheck, first behind authorize, refuses malformed and oversized Requests with
//     InvalidArgument before any element acts;
//   - recvnetns wraps sdk's recvfd on both halves: a namespace is opened only as the file
//     descriptor the peer passed, never by a path the peer wrote;
//   - the onward dials carry monitorretry, so a next-hop monitor stream cut while the next hop
//     lives is re-opened without a DOWN (field report 4), and a dead next hop is reported at once.
package xconnect
