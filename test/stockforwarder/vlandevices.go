//go:build linux

package main

import (
	"context"
	"net"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/devicecfg"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// The vlan devices as stock v1.18 sets them up, whatever the VPP (external included): the
// selector file gives a via-label to device map (an unreadable file stops start-up, an empty one
// is warned of and leaves the map empty); each device that is a kernel link and does not hold the
// tunnel IP gets an af_packet interface with the link's MTU, admin up, and the kernel link is put
// in promiscuous mode; a device that is no kernel link is looked up in VPP by name and put in
// promiscuous mode there. A device that fails is warned of and start-up goes on. The selector
// file is parsed by this project's devicecfg, which reads stock's format; the af_packet
// parameters are stock's defaults (vppinit.DefaultParams).

// deviceMap reads NSM_DEVICE_SELECTOR_FILE as stock does; nil when unset or empty.
func deviceMap(ctx context.Context, path string) map[string]string {
	if path == "" {
		return nil
	}
	viaToDevice, err := devicecfg.ReadFile(path)
	if err != nil {
		log.FromContext(ctx).Fatalf("failed to get device selector configuration file: %+v", err)
	}
	if len(viaToDevice) == 0 {
		log.FromContext(ctx).Warn("skipping matching labels to device names: empty interface list")
		return nil
	}
	return viaToDevice
}

// initVlanDevices hands each device of viaToDevice to VPP; failures are only logged.
func initVlanDevices(ctx context.Context, vppConn api.Connection, viaToDevice map[string]string, tunnelIP net.IP) {
	for _, device := range viaToDevice {
		if err := initVlanDevice(ctx, vppConn, device, tunnelIP); err != nil {
			log.FromContext(ctx).Warnf("Link init failed (%v)", err)
		}
	}
}

func initVlanDevice(ctx context.Context, vppConn api.Connection, device string, tunnelIP net.IP) error {
	link, err := netlink.LinkByName(device)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		return errors.Wrapf(promiscInVPP(ctx, vppConn, device), "init for device %s failed", device)
	case err != nil:
		return errors.Wrapf(err, "init for device %s failed", device)
	}
	if !holdsAddress(link, tunnelIP) {
		if err = attachAfPacket(ctx, vppConn, link); err != nil {
			return errors.Wrapf(err, "error setting up device %s", device)
		}
	}
	if err = netlink.SetPromiscOn(link); err != nil {
		log.FromContext(ctx).Warnf("Promiscuous mode not set on %s: %v", device, err)
	}
	return nil
}

func holdsAddress(link netlink.Link, ip net.IP) bool {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return false
	}
	for _, addr := range addrs {
		if addr.IPNet != nil && addr.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func attachAfPacket(ctx context.Context, vppConn api.Connection, link netlink.Link) error {
	p := vppinit.DefaultParams().AfPacket
	mac := link.Attrs().HardwareAddr
	created, err := af_packet.NewServiceClient(vppConn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: p.Mode, HwAddr: types.ToVppMacAddress(&mac), HostIfName: link.Attrs().Name,
		RxFrameSize: p.RxFrameSize, TxFrameSize: p.TxFrameSize, RxFramesPerBlock: p.RxFramesPerBlock, TxFramesPerBlock: p.TxFramesPerBlock,
		NumRxQueues: p.NumRxQueues, NumTxQueues: p.NumTxQueues, Flags: p.Flags,
	})
	if err != nil {
		return err
	}
	mtu := uint32(link.Attrs().MTU)
	// Stock checks the wrong error after setting the MTU, so a failure there goes unnoticed.
	if _, mtuErr := interfaces.NewServiceClient(vppConn).SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{
		SwIfIndex: created.SwIfIndex, Mtu: []uint32{mtu, mtu, mtu, mtu},
	}); mtuErr != nil {
		log.FromContext(ctx).Debugf("MTU of %s not set: %v", link.Attrs().Name, mtuErr)
	}
	_, err = interfaces.NewServiceClient(vppConn).SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{
		SwIfIndex: created.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP,
	})
	return errors.Wrap(err, "unable to set interface admin UP")
}

func promiscInVPP(ctx context.Context, vppConn api.Connection, name string) error {
	dump, err := interfaces.NewServiceClient(vppConn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{NameFilterValid: true, NameFilter: name})
	if err != nil {
		return err
	}
	details, err := dump.Recv()
	if err != nil {
		return err
	}
	_, err = interfaces.NewServiceClient(vppConn).SwInterfaceSetPromisc(ctx, &interfaces.SwInterfaceSetPromisc{SwIfIndex: details.SwIfIndex, PromiscOn: true})
	return err
}
