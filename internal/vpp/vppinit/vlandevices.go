package vppinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// attachVlanDevices makes the vlan mechanism's host devices usable by VPP. A device that is a
// kernel link gets an af_packet interface (VPP names it host-<device>, which the vlan mechanism
// looks for) and promiscuous mode, since vlan sub-interfaces receive frames for other MACs. A
// device that is no kernel link must already be VPP's own (an external VPP with DPDK): it only
// gets promiscuous mode. The uplink is skipped: it is in VPP already. A device whose af_packet
// interface VPP still has from a previous run (a restart beside a VPP that kept running) keeps it.
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
		swIfIndex, found, err := existingAfPacket(ctx, vppConn, device)
		if err != nil {
			return fmt.Errorf("vlan device %s: %w", device, err)
		}
		if !found {
			if swIfIndex, err = createAfPacket(ctx, vppConn, link, params); err != nil {
				return fmt.Errorf("vlan device %s: %w", device, err)
			}
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
		if found {
			log.FromContext(ctx).Infof("vlan device %s: VPP has its af_packet interface already (sw_if_index %d), taken up again", device, swIfIndex)
			continue
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

// existingAfPacket finds the af_packet interface VPP has on the host link device, as a previous
// run of the forwarder left it beside a VPP that kept running: VPP refuses a second one
// ("interface already exists"). The af_packet dump names the host link, so a VPP interface that
// merely carries the name host-<device> is not mistaken for it.
func existingAfPacket(ctx context.Context, vppConn api.Connection, device string) (interface_types.InterfaceIndex, bool, error) {
	dump, err := af_packet.NewServiceClient(vppConn).AfPacketDump(ctx, &af_packet.AfPacketDump{})
	if err != nil {
		return 0, false, fmt.Errorf("listing VPP's af_packet interfaces: %w", err)
	}
	for {
		details, err := dump.Recv()
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("listing VPP's af_packet interfaces: %w", err)
		}
		if details.HostIfName == device {
			return details.SwIfIndex, true, nil
		}
	}
}
