package domain

import (
	"context"
	"fmt"

	"go.fd.io/govpp/api"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
)

// PlantVPPLoopback creates a loopback interface carrying tag in node's VPP, as another agent
// sharing the VPP would (a CNI's interface), and returns it as VPPInterfaces lists it.
func (d *Domain) PlantVPPLoopback(ctx context.Context, node *Node, tag string) (VPPInterface, error) {
	var planted VPPInterface
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		client := interfaces.NewServiceClient(conn)
		reply, err := client.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		if err != nil {
			return err
		}
		if _, err = client.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: reply.SwIfIndex, Tag: tag}); err != nil {
			return err
		}
		planted.SwIfIndex = uint32(reply.SwIfIndex)
		return nil
	})
	if err != nil {
		return planted, fmt.Errorf("plant a loopback tagged %q in %s's VPP: %w", tag, node.Name, err)
	}
	all, err := d.VPPInterfaces(ctx, node)
	if err != nil {
		return planted, err
	}
	for _, i := range all {
		if i.SwIfIndex == planted.SwIfIndex {
			return i, nil
		}
	}
	return planted, fmt.Errorf("%s's VPP does not list the loopback it created (sw_if_index %d)", node.Name, planted.SwIfIndex)
}
