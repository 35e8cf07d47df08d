package restore

import (
	"context"
	"fmt"
	"net"

	"github.com/pkg/errors"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ipip"
	"github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// Interface kinds this package can tell apart and delete.
const (
	kindTap          = "tap"
	kindAfPacket     = "af_packet"
	kindVxlan        = "vxlan"
	kindMemif        = "memif"
	kindWireguard    = "wireguard"
	kindIpip         = "ipip"
	kindIpsec        = "ipsec"
	kindSubinterface = "subinterface"
)

// kindName names an interface's kind in metrics and reports; no per-kind dump knew it.
func kindName(kind string) string {
	if kind == "" {
		return "unknown"
	}
	return kind
}

// deleter removes one VPP interface with the API of its kind.
type deleter func(ctx context.Context) error

// vppInterface is one VPP interface and how to delete it.
type vppInterface struct {
	index interface_types.InterfaceIndex
	name  string
	tag   string
	kind  string // empty when no per-kind dump knows it
	// hostIfName is the kernel side of a tap or an af_packet interface.
	hostIfName string
	// vxlanSrc, vxlanDst and vxlanVNI describe a vxlan tunnel.
	vxlanSrc, vxlanDst net.IP
	vxlanVNI           uint32
	remove             deleter
}

func (i *vppInterface) String() string {
	return fmt.Sprintf("VPP interface %s (sw_if_index %d, tag %q)", i.name, i.index, i.tag)
}

// vppView is what VPP holds, read once. The kind is learnt from the per-kind dumps rather than
// from interface names, which VPP does not promise.
type vppView struct {
	byIndex map[interface_types.InterfaceIndex]*vppInterface
	ordered []*vppInterface
}

// anyIndex asks a dump for every interface.
const anyIndex = ^interface_types.InterfaceIndex(0)

// collector reads what one kind's dump says of the view's interfaces (of index only, unless anyIndex).
type collector func(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error

var collectors = map[string]collector{
	kindTap: collectTaps, kindAfPacket: collectAfPackets, kindVxlan: collectVxlanTunnels,
	kindMemif: collectMemifs, kindWireguard: collectWireguards, kindIpip: collectIpipTunnels,
	kindIpsec: collectIpsecInterfaces,
}

// readVPP reads every interface VPP holds.
func readVPP(ctx context.Context, vppConn api.Connection) (*vppView, error) {
	return readView(ctx, vppConn, anyIndex, kindTap, kindAfPacket, kindVxlan, kindMemif, kindWireguard, kindIpip, kindIpsec)
}

// readInterface reads one interface, learning only whether it is of kind: what an adoption checks,
// at the cost of two small dumps rather than all of VPP. nil when VPP holds no such interface.
func readInterface(ctx context.Context, vppConn api.Connection, index interface_types.InterfaceIndex, kind string) (*vppInterface, error) {
	view, err := readView(ctx, vppConn, index, kind)
	if err != nil {
		return nil, err
	}
	return view.byIndex[index], nil
}

func readView(ctx context.Context, vppConn api.Connection, index interface_types.InterfaceIndex, kinds ...string) (*vppView, error) {
	stream, err := interfaces.NewServiceClient(vppConn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: index})
	if err != nil {
		return nil, errors.Wrap(err, "dumping VPP interfaces")
	}
	view := &vppView{byIndex: map[interface_types.InterfaceIndex]*vppInterface{}}
	err = vppdump.Drain(stream.Recv, "VPP interfaces", func(d *interfaces.SwInterfaceDetails) {
		if index != anyIndex && d.SwIfIndex != index {
			return
		}
		i := &vppInterface{index: d.SwIfIndex, name: d.InterfaceName, tag: d.Tag}
		if d.SupSwIfIndex != uint32(d.SwIfIndex) {
			i.kind, i.remove = kindSubinterface, deleteSubinterface(vppConn, d.SwIfIndex)
		}
		view.byIndex[d.SwIfIndex] = i
		view.ordered = append(view.ordered, i)
	})
	if err != nil || len(view.ordered) == 0 {
		return view, err
	}
	for _, kind := range kinds {
		if err := collectors[kind](ctx, vppConn, view, index); err != nil {
			// A VPP without one plugin answers its dump with an error: the other kinds still count.
			log.FromContext(ctx).Debugf("restore: %v", err)
		}
	}
	for _, i := range view.ordered {
		if i.remove != nil {
			i.remove = withoutDependents(vppConn, i.index, i.remove)
		}
	}
	return view, nil
}

// tagged lists the interfaces whose tag is one of tags, in the order VPP listed them.
func (v *vppView) tagged(tags map[string]bool) []*vppInterface {
	var found []*vppInterface
	for _, i := range v.ordered {
		if i.tag != "" && tags[i.tag] {
			found = append(found, i)
		}
	}
	return found
}

// kindOf sets what a per-kind dump says of an interface the main dump listed.
func (v *vppView) kindOf(index interface_types.InterfaceIndex, kind string, remove deleter) *vppInterface {
	i, ok := v.byIndex[index]
	if !ok {
		return &vppInterface{}
	}
	i.kind, i.remove = kind, remove
	return i
}

func collectTaps(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := tapv2.NewServiceClient(vppConn).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: index})
	if err != nil {
		return errors.Wrap(err, "dumping taps")
	}
	return vppdump.Drain(stream.Recv, "taps", func(d *tapv2.SwInterfaceTapV2Details) {
		index := interface_types.InterfaceIndex(d.SwIfIndex)
		view.kindOf(index, kindTap, func(ctx context.Context) error {
			_, err := tapv2.NewServiceClient(vppConn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: index})
			return err
		}).hostIfName = d.HostIfName
	})
}

func collectAfPackets(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := af_packet.NewServiceClient(vppConn).AfPacketDump(ctx, &af_packet.AfPacketDump{})
	if err != nil {
		return errors.Wrap(err, "dumping af_packet interfaces")
	}
	return vppdump.Drain(stream.Recv, "af_packet interfaces", func(d *af_packet.AfPacketDetails) {
		hostIfName := d.HostIfName
		view.kindOf(d.SwIfIndex, kindAfPacket, func(ctx context.Context) error {
			_, err := af_packet.NewServiceClient(vppConn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: hostIfName})
			return err
		}).hostIfName = hostIfName
	})
}

func collectVxlanTunnels(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := vxlan.NewServiceClient(vppConn).VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: index})
	if err != nil {
		return errors.Wrap(err, "dumping vxlan tunnels")
	}
	return vppdump.Drain(stream.Recv, "vxlan tunnels", func(d *vxlan.VxlanTunnelV2Details) {
		tunnel := vxlan.VxlanAddDelTunnelV3{
			IsAdd:          false,
			Instance:       d.Instance,
			SrcAddress:     d.SrcAddress,
			DstAddress:     d.DstAddress,
			SrcPort:        d.SrcPort,
			DstPort:        d.DstPort,
			McastSwIfIndex: d.McastSwIfIndex,
			EncapVrfID:     d.EncapVrfID,
			DecapNextIndex: d.DecapNextIndex,
			Vni:            d.Vni,
		}
		i := view.kindOf(d.SwIfIndex, kindVxlan, func(ctx context.Context) error {
			request := tunnel
			_, err := vxlan.NewServiceClient(vppConn).VxlanAddDelTunnelV3(ctx, &request)
			return err
		})
		i.vxlanSrc, i.vxlanDst, i.vxlanVNI = d.SrcAddress.ToIP(), d.DstAddress.ToIP(), d.Vni
	})
}

func collectMemifs(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := memif.NewServiceClient(vppConn).MemifDump(ctx, &memif.MemifDump{})
	if err != nil {
		return errors.Wrap(err, "dumping memif interfaces")
	}
	return vppdump.Drain(stream.Recv, "memif interfaces", func(d *memif.MemifDetails) {
		index, socketID := d.SwIfIndex, d.SocketID
		view.kindOf(index, kindMemif, func(ctx context.Context) error {
			if _, err := memif.NewServiceClient(vppConn).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: index}); err != nil {
				return err
			}
			return deleteUnusedMemifSocket(ctx, vppConn, socketID)
		})
	})
}

// deleteUnusedMemifSocket deletes the memif socket a released memif interface was on, once no
// memif uses it: sdk-vpp adds one socket per connection and deletes it on the Close it sees, so a
// previous run's stays without this. Socket 0 is VPP's default; a socket another memif (another
// agent's) is on is left.
func deleteUnusedMemifSocket(ctx context.Context, vppConn api.Connection, socketID uint32) error {
	if socketID == 0 {
		return nil
	}
	stream, err := memif.NewServiceClient(vppConn).MemifDump(ctx, &memif.MemifDump{})
	if err != nil {
		return errors.Wrap(err, "dumping memif interfaces")
	}
	inUse := false
	if err = vppdump.Drain(stream.Recv, "memif interfaces", func(d *memif.MemifDetails) { inUse = inUse || d.SocketID == socketID }); err != nil || inUse {
		return err
	}
	_, err = memif.NewServiceClient(vppConn).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: false, SocketID: socketID})
	return errors.Wrapf(err, "deleting memif socket %d", socketID)
}

func collectWireguards(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := wireguard.NewServiceClient(vppConn).WireguardInterfaceDump(ctx, &wireguard.WireguardInterfaceDump{SwIfIndex: index})
	if err != nil {
		return errors.Wrap(err, "dumping wireguard interfaces")
	}
	return vppdump.Drain(stream.Recv, "wireguard interfaces", func(d *wireguard.WireguardInterfaceDetails) {
		index := d.Interface.SwIfIndex
		view.kindOf(index, kindWireguard, func(ctx context.Context) error {
			_, err := wireguard.NewServiceClient(vppConn).WireguardInterfaceDelete(ctx, &wireguard.WireguardInterfaceDelete{SwIfIndex: index})
			return err
		})
	})
}

func collectIpipTunnels(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := ipip.NewServiceClient(vppConn).IpipTunnelDump(ctx, &ipip.IpipTunnelDump{SwIfIndex: index})
	if err != nil {
		return errors.Wrap(err, "dumping ipip tunnels")
	}
	return vppdump.Drain(stream.Recv, "ipip tunnels", func(d *ipip.IpipTunnelDetails) {
		index := d.Tunnel.SwIfIndex
		view.kindOf(index, kindIpip, func(ctx context.Context) error {
			_, err := ipip.NewServiceClient(vppConn).IpipDelTunnel(ctx, &ipip.IpipDelTunnel{SwIfIndex: index})
			return err
		})
	})
}

// collectIpsecInterfaces reads the route-based IPsec interfaces (ipsec_itf), which sdk-vpp's ipsec
// mechanism protects with its IKEv2 profile: not ipip tunnels, which ipip_tunnel_dump lists.
func collectIpsecInterfaces(ctx context.Context, vppConn api.Connection, view *vppView, index interface_types.InterfaceIndex) error {
	stream, err := ipsec.NewServiceClient(vppConn).IpsecItfDump(ctx, &ipsec.IpsecItfDump{SwIfIndex: index})
	if err != nil {
		return errors.Wrap(err, "dumping ipsec interfaces")
	}
	return vppdump.Drain(stream.Recv, "ipsec interfaces", func(d *ipsec.IpsecItfDetails) {
		index := d.Itf.SwIfIndex
		view.kindOf(index, kindIpsec, func(ctx context.Context) error {
			_, err := ipsec.NewServiceClient(vppConn).IpsecItfDelete(ctx, &ipsec.IpsecItfDelete{SwIfIndex: index})
			return err
		})
	})
}

func deleteSubinterface(vppConn api.Connection, index interface_types.InterfaceIndex) deleter {
	return func(ctx context.Context) error {
		_, err := interfaces.NewServiceClient(vppConn).DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: index})
		return err
	}
}
