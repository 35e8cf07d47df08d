package vppinit

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
)

// Run hands the uplink to VPP as mode says, then the vlan devices (WithVlanDevices), and returns
// the tunnel IP: tunnelIP when set, else the uplink's first global unicast address. With None
// the uplink is left alone; the tunnel IP is still derived from the host when unset.
func Run(ctx context.Context, vppConn api.Connection, mode Mode, tunnelIP net.IP, opts ...Option) (net.IP, error) {
	o := &options{params: DefaultParams(), bpffs: defaultBPFFS}
	for _, opt := range opts {
		opt(o)
	}
	if o.handle == nil {
		handle, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("opening netlink: %w", err)
		}
		defer handle.Close()
		o.handle = handle
	}
	uplink, err := FindUplink(o.handle, tunnelIP)
	if mode == None {
		uplinkName := ""
		if err != nil {
			log.FromContext(ctx).Warnf("VPP init NONE: tunnel IP %v, uplink not identified: %v", tunnelIP, err)
		} else {
			tunnelIP, uplinkName = uplink.TunnelIP(tunnelIP), uplink.Link.Attrs().Name
		}
		return tunnelIP, attachVlanDevices(ctx, vppConn, o.handle, o.vlanDevices, uplinkName, o.params.AfPacket)
	}
	if err != nil {
		return nil, err
	}
	tunnelIP = uplink.TunnelIP(tunnelIP)
	if tunnelIP == nil {
		return nil, fmt.Errorf("uplink %s has no global unicast address to use as tunnel IP", uplink.Link.Attrs().Name)
	}
	log.FromContext(ctx).Infof("VPP init %s: uplink %s, tunnel IP %s", mode, uplink.Link.Attrs().Name, tunnelIP)

	var swIfIndex interface_types.InterfaceIndex
	switch mode {
	case AfPacket:
		swIfIndex, err = createAfPacket(ctx, vppConn, uplink.Link, o.params.AfPacket)
	case AfXdp:
		if err = prepareAfXdp(ctx, o.handle, uplink.Link, o.params.AfXdp.Prog, o.bpffs); err != nil {
			return nil, fmt.Errorf("NSM_VPP_INIT=%s: %w", mode, err)
		}
		swIfIndex, err = createAfXdp(ctx, vppConn, uplink.Link, o.params.AfXdp)
	default:
		return nil, fmt.Errorf("unknown VPP init mode %q", mode)
	}
	if err != nil {
		return nil, err
	}
	if err := configureUplink(ctx, vppConn, swIfIndex, uplink); err != nil {
		return nil, fmt.Errorf("configuring uplink %s in VPP: %w", uplink.Link.Attrs().Name, err)
	}
	if mode == AfXdp {
		if err := PublishTunnelIP(o.bpffs, tunnelIP); err != nil {
			return nil, err
		}
	}
	return tunnelIP, attachVlanDevices(ctx, vppConn, o.handle, o.vlanDevices, uplink.Link.Attrs().Name, o.params.AfPacket)
}

func createAfPacket(ctx context.Context, vppConn api.Connection, link netlink.Link, p AfPacketParams) (interface_types.InterfaceIndex, error) {
	request := &af_packet.AfPacketCreateV3{
		Mode:             p.Mode,
		HwAddr:           types.ToVppMacAddress(&link.Attrs().HardwareAddr),
		HostIfName:       link.Attrs().Name,
		RxFrameSize:      p.RxFrameSize,
		TxFrameSize:      p.TxFrameSize,
		RxFramesPerBlock: p.RxFramesPerBlock,
		TxFramesPerBlock: p.TxFramesPerBlock,
		NumRxQueues:      p.NumRxQueues,
		NumTxQueues:      p.NumTxQueues,
		Flags:            p.Flags,
	}
	var reply *af_packet.AfPacketCreateV3Reply
	err := timed(ctx, "AfPacketCreateV3", func() (err error) {
		reply, err = af_packet.NewServiceClient(vppConn).AfPacketCreateV3(ctx, request)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("af_packet_create_v3 on %s: %w", link.Attrs().Name, err)
	}
	return reply.SwIfIndex, nil
}

func createAfXdp(ctx context.Context, vppConn api.Connection, link netlink.Link, p AfXdpParams) (interface_types.InterfaceIndex, error) {
	request := &af_xdp.AfXdpCreateV3{
		HostIf:  link.Attrs().Name,
		RxqNum:  allRxQueues,
		RxqSize: p.RxqSize,
		TxqSize: p.TxqSize,
		Mode:    p.Mode,
		Flags:   p.Flags,
		Prog:    p.Prog,
	}
	var reply *af_xdp.AfXdpCreateV3Reply
	err := timed(ctx, "AfXdpCreateV3", func() (err error) {
		reply, err = af_xdp.NewServiceClient(vppConn).AfXdpCreateV3(ctx, request)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("af_xdp_create_v3 on %s: %w", link.Attrs().Name, err)
	}
	// As the stock forwarder: VPP answers with the node's MAC (af_xdp makes one up otherwise), and
	// polls only while traffic flows.
	if err := setMacAddress(ctx, vppConn, reply.SwIfIndex, link.Attrs().HardwareAddr); err != nil {
		return 0, err
	}
	return reply.SwIfIndex, setAdaptiveRxMode(ctx, vppConn, reply.SwIfIndex)
}
