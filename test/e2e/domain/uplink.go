package domain

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.fd.io/govpp"

	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// giveUplinkToVPP does what the operator of an external VPP does
// before the forwarder starts (the forwarder leaves an external VPP's uplink
// alone): hand the node's uplink to VPP as an af_packet interface carrying
// the tunnel IP, with the MTU, addresses, routes and neighbours of the host
// link. It uses the forwarder's own uplink code, run against the node's VPP.
func giveUplinkToVPP(ctx context.Context, node *Node) error {
	nodeNetns, err := netns.GetFromName(node.Netns)
	if err != nil {
		return err
	}
	defer func() { _ = nodeNetns.Close() }()
	handle, err := netlink.NewHandleAt(nodeNetns)
	if err != nil {
		return err
	}
	defer handle.Close()
	conn, err := govpp.Connect(node.APISocket)
	if err != nil {
		return fmt.Errorf("connect to the VPP of %s: %w", node.Name, err)
	}
	defer conn.Disconnect()
	tunnelIP := node.IP.Addr().AsSlice()
	// Its progress lines would only clutter the demo; a failure is returned.
	quiet := log.WithLog(ctx)
	if _, err = vppinit.Run(quiet, conn, vppinit.AfPacket, tunnelIP, vppinit.WithNetlinkHandle(handle)); err != nil {
		return fmt.Errorf("hand %s's uplink to its VPP: %w", node.Name, err)
	}
	return nil
}
