// Package vpp is the simulated VPP itself: it keeps the state, answers each binary API
// message the way VPP does (including VPP's error codes for bad indexes and for deleting
// what does not exist), drives the kernel side through the dataplane and, as the
// dataplane's Forwarder, decides where every packet goes from what was configured.
package vpp
