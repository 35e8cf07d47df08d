package vppinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// attachVlanDevices makes the vlan mechanism's host devices usable by VPP. A device that is a
// kernel link gets an af_packet interface (VPP names it host-<device>, which the vlan mechanism
// looks for) and promiscuous mode, since vlan sub-interfaces receive frames for other MACs. A
// device that is no kernel link must already be VPP's own (an external VPP with DPDK): it only
// gets promiscuous mode. The uplink is skipped: it is in VPP already.
func attachVlanDevices(ctx context.Context, vppConn api.Connection, handle *netlink.Handle, devices []string, uplinkName string, params AfPacketParams) error {
	slices.Sort(devices)
	for _, device := range slices.Compact(devices) {
		if device == uplinkName {
			continue
		}
		link, err := handle.LinkByName(device)
		var notFound netlink.LinkNotFoundError
		switch {
		case errors.As(err, &notFound):
			if err := setPromiscInVPP(ctx, vppConn, device); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("vlan device %s: %w", device, err)
		}
		swIfIndex, err := createAfPacket(ctx, vppConn, link, params)
		if err != nil {
			return fmt.Errorf("vlan device %s: %w", device, err)
		}
		if err := setMtu(ctx, vppConn, swIfIndex, link.Attrs().MTU); err != nil {
			return fmt.Errorf("vlan device %s: %w", device, err)
		}
		if err := setAdminUp(ctx, vppConn, swIfIndex); err != nil {
			return fmt.Errorf("vlan device %s: %w", device, err)
		}
		if err := handle.SetPromiscOn(link); err != nil {
			return fmt.Errorf("vlan device %s: promiscuous mode: %w", device, err)
		}
		log.FromContext(ctx).Infof("vlan device %s attached to VPP", device)
	}
	return nil
}

func setPromiscInVPP(ctx context.Context, vppConn api.Connection, device string) error {
	dump, err := interfaces.NewServiceClient(vppConn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: device})
	if err != nil {
		return fmt.Errorf("vlan device %s: listing VPP interfaces: %w", device, err)
	}
	for {
		details, err := dump.Recv()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("vlan device %s is neither a kernel link nor a VPP interface", device)
		}
		if err != nil {
			return fmt.Errorf("vlan device %s: listing VPP interfaces: %w", device, err)
		}
		if details.InterfaceName != device {
			continue
		}
		request := &interfaces.SwInterfaceSetPromisc{SwIfIndex: details.SwIfIndex, PromiscOn: true}
		err = timed(ctx, "SwInterfaceSetPromisc", func() error {
			_, err := interfaces.NewServiceClient(vppConn).SwInterfaceSetPromisc(ctx, request)
			return err
		})
		if err != nil {
			return fmt.Errorf("vlan device %s: promiscuous mode in VPP: %w", device, err)
		}
		return nil
	}
}
