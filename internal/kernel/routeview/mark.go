package routeview

// ForwarderProtocol is the rtnetlink protocol value that marks every rule and route this
// forwarder installs in a client's namespace: an RTPROT value that no kernel subsystem or
// well-known routing daemon uses (see /etc/iproute2/rt_protos). The elements that reconcile
// kernel state only ever delete what carries it, so all of them must agree on this one value.
const ForwarderProtocol = 0xfa
