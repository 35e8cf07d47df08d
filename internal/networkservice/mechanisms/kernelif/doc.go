// Package kernelif names how the forwarder builds the VPP side of a kernel-mechanism interface:
// a tap (needs /dev/vhost-net) or a veth pair bound to VPP with af-packet.
package kernelif
