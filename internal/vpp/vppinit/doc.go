// Package vppinit hands the node's uplink to VPP at start-up: it finds the uplink (the link holding
// the tunnel IP, else the default-route link), opens it in VPP with af_packet or AF_XDP, and gives
// VPP the link's MTU, addresses, routes and neighbours, so that tunnels (vxlan, wireguard, ipsec)
// leave the node from VPP with the node's own address. With AF_XDP, VPP attaches the image's XDP
// program (xdp/afxdp.c), which hands VPP only NSM's tunnel traffic to the tunnel IP and leaves
// every other frame to the node.
package vppinit
