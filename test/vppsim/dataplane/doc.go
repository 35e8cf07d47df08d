// Package dataplane is the simulated VPP's kernel side and packet path: it creates taps
// and tuns in the namespaces the API asks for, binds af_packet sockets to host
// interfaces, sends and receives VXLAN over kernel UDP sockets, and moves every packet
// received on one of these ports to wherever the Forwarder (the VPP configuration) says.
// Nothing is forwarded that the configuration does not ask for.
package dataplane
