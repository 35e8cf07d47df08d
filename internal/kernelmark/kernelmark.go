// Package kernelmark holds the rtnetlink protocol value that marks every rule and route this
// forwarder installs in a client's namespace. The elements that reconcile kernel state only ever
// delete what carries it, so all of them must agree on one value.
package kernelmark

// Protocol is an RTPROT value that no kernel subsystem or well-known routing daemon uses
// (see /etc/iproute2/rt_protos).
const Protocol = 0xfa
