package domain

import (
	"context"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
)

// InterfaceMTU is an interface of a node's VPP with its MTUs as sw_interface_dump reports them:
// the link's (bytes of a frame's payload) and the L3 one of each protocol, IPv4 first.
type InterfaceMTU struct {
	VPPInterface
	Link uint32
	// L3 is VPP's L3, IPv4, IPv6 and MPLS MTU, as sw_interface_set_mtu sets them.
	L3 [4]uint32
}

// VPPInterfaceMTUs lists the interfaces of node's VPP with their MTUs.
func (d *Domain) VPPInterfaceMTUs(ctx context.Context, node *Node) ([]InterfaceMTU, error) {
	var found []InterfaceMTU
	err := dumpVPPInterfaces(ctx, node, func(details *interfaces.SwInterfaceDetails) {
		mtu := InterfaceMTU{VPPInterface: vppInterfaceOf(details), Link: uint32(details.LinkMtu)}
		copy(mtu.L3[:], details.Mtu)
		found = append(found, mtu)
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}
