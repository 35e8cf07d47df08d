// Package xconnect composes the forwarder's NSM endpoint: the server chain that accepts a
// connection from nsmgr, programs VPP and the client's kernel namespace, and the client chain
// that connects onward to the next hop (an endpoint, or the forwarder on the remote node).
//
// The kernel IP-context elements are composed here rather than taken from sdk-kernel whole, so
// that policy routing is one element this project owns (see kernelcontext.go).
package xconnect
