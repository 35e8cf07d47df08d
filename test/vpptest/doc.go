// Package vpptest gives the forwarder's tests one VPP whichever the backend, the simulator
// (test/vppsim) or upstream VPP (test/realvpp): connections that record what a client sent, and
// views of VPP's state read through VPP's own API, so that a test asserts the same things on
// both (Each runs it once per backend).
package vpptest
