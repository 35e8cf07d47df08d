package domain

import (
	"context"
	"fmt"
	"io"

	"go.fd.io/govpp/api"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
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
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		dump, err := interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		if err != nil {
			return err
		}
		for {
			details, recvErr := dump.Recv()
			if recvErr == io.EOF {
				return nil
			}
			if recvErr != nil {
				return recvErr
			}
			mtu := InterfaceMTU{
				VPPInterface: VPPInterface{SwIfIndex: uint32(details.SwIfIndex), Name: details.InterfaceName, Kind: kindOf(details), Tag: details.Tag},
				Link:         uint32(details.LinkMtu),
			}
			copy(mtu.L3[:], details.Mtu)
			found = append(found, mtu)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sw_interface_dump on %s: %w", node.Name, err)
	}
	return found, nil
}
