// Package vppconn connects the forwarder to VPP: the operator's VPP through its API socket when
// that socket exists, otherwise a VPP the forwarder starts itself. Every path is bounded in time:
// when neither is possible the caller learns it at once, with the socket that was tried.
package vppconn
