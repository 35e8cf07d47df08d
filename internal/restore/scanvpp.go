package restore

import (
	"context"
	"fmt"
	"io"

	"github.com/pkg/errors"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ipip"
	"github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// deleter removes one VPP interface with the API of its kind.
type deleter func(ctx context.Context) error

// scanVPP returns a leftover for every tagged VPP interface whose kind it can delete. The kind is
// learnt from the per-kind dumps rather than from interface names, which VPP does not promise.
func scanVPP(ctx context.Context, vppConn api.Connection) ([]leftover, error) {
	tagged, err := taggedInterfaces(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	if len(tagged) == 0 {
		return nil, nil
	}
	deleters := map[interface_types.InterfaceIndex]deleter{}
	for _, collect := range []func(context.Context, api.Connection, map[interface_types.InterfaceIndex]deleter) error{
		collectTaps, collectAfPackets, collectVxlanTunnels, collectMemifs, collectWireguards, collectIpipTunnels,
	} {
		if err := collect(ctx, vppConn, deleters); err != nil {
			// A VPP without one plugin answers its dump with an error: the other kinds still count.
			log.FromContext(ctx).Warnf("restore: %v", err)
		}
	}
	var found []leftover
	for _, details := range tagged {
		remove, ok := deleters[details.SwIfIndex]
		if !ok && details.SupSwIfIndex != uint32(details.SwIfIndex) {
			remove = deleteSubinterface(vppConn, details.SwIfIndex)
			ok = true
		}
		if !ok {
			log.FromContext(ctx).Warnf("restore: leaving VPP interface %s (tag %q): unknown kind %q",
				details.InterfaceName, details.Tag, details.InterfaceDevType)
			continue
		}
		found = append(found, leftover{
			owner:       details.Tag,
			description: fmt.Sprintf("VPP interface %s (sw_if_index %d)", details.InterfaceName, details.SwIfIndex),
			release:     withoutDependents(vppConn, details.SwIfIndex, remove),
		})
	}
	return found, nil
}

func taggedInterfaces(ctx context.Context, vppConn api.Connection) ([]*interfaces.SwInterfaceDetails, error) {
	stream, err := interfaces.NewServiceClient(vppConn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return nil, errors.Wrap(err, "dumping VPP interfaces")
	}
	var tagged []*interfaces.SwInterfaceDetails
	err = drain(stream.Recv, "VPP interfaces", func(d *interfaces.SwInterfaceDetails) {
		if d.Tag != "" {
			tagged = append(tagged, d)
		}
	})
	return tagged, err
}

func collectTaps(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := tapv2.NewServiceClient(vppConn).SwInterfaceTapV2Dump(ctx, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return errors.Wrap(err, "dumping taps")
	}
	return drain(stream.Recv, "taps", func(d *tapv2.SwInterfaceTapV2Details) {
		index := interface_types.InterfaceIndex(d.SwIfIndex)
		into[index] = func(ctx context.Context) error {
			_, err := tapv2.NewServiceClient(vppConn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: index})
			return err
		}
	})
}

func collectAfPackets(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := af_packet.NewServiceClient(vppConn).AfPacketDump(ctx, &af_packet.AfPacketDump{})
	if err != nil {
		return errors.Wrap(err, "dumping af_packet interfaces")
	}
	return drain(stream.Recv, "af_packet interfaces", func(d *af_packet.AfPacketDetails) {
		hostIfName := d.HostIfName
		into[d.SwIfIndex] = func(ctx context.Context) error {
			_, err := af_packet.NewServiceClient(vppConn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: hostIfName})
			return err
		}
	})
}

func collectVxlanTunnels(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := vxlan.NewServiceClient(vppConn).VxlanTunnelV2Dump(ctx, &vxlan.VxlanTunnelV2Dump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return errors.Wrap(err, "dumping vxlan tunnels")
	}
	return drain(stream.Recv, "vxlan tunnels", func(d *vxlan.VxlanTunnelV2Details) {
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
		into[d.SwIfIndex] = func(ctx context.Context) error {
			request := tunnel
			_, err := vxlan.NewServiceClient(vppConn).VxlanAddDelTunnelV3(ctx, &request)
			return err
		}
	})
}

func collectMemifs(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := memif.NewServiceClient(vppConn).MemifDump(ctx, &memif.MemifDump{})
	if err != nil {
		return errors.Wrap(err, "dumping memif interfaces")
	}
	return drain(stream.Recv, "memif interfaces", func(d *memif.MemifDetails) {
		index := d.SwIfIndex
		into[index] = func(ctx context.Context) error {
			_, err := memif.NewServiceClient(vppConn).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: index})
			return err
		}
	})
}

func collectWireguards(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := wireguard.NewServiceClient(vppConn).WireguardInterfaceDump(ctx, &wireguard.WireguardInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return errors.Wrap(err, "dumping wireguard interfaces")
	}
	return drain(stream.Recv, "wireguard interfaces", func(d *wireguard.WireguardInterfaceDetails) {
		index := d.Interface.SwIfIndex
		into[index] = func(ctx context.Context) error {
			_, err := wireguard.NewServiceClient(vppConn).WireguardInterfaceDelete(ctx, &wireguard.WireguardInterfaceDelete{SwIfIndex: index})
			return err
		}
	})
}

func collectIpipTunnels(ctx context.Context, vppConn api.Connection, into map[interface_types.InterfaceIndex]deleter) error {
	stream, err := ipip.NewServiceClient(vppConn).IpipTunnelDump(ctx, &ipip.IpipTunnelDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return errors.Wrap(err, "dumping ipip tunnels")
	}
	return drain(stream.Recv, "ipip tunnels", func(d *ipip.IpipTunnelDetails) {
		index := d.Tunnel.SwIfIndex
		into[index] = func(ctx context.Context) error {
			_, err := ipip.NewServiceClient(vppConn).IpipDelTunnel(ctx, &ipip.IpipDelTunnel{SwIfIndex: index})
			return err
		}
	})
}

func deleteSubinterface(vppConn api.Connection, index interface_types.InterfaceIndex) deleter {
	return func(ctx context.Context) error {
		_, err := interfaces.NewServiceClient(vppConn).DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: index})
		return err
	}
}

// drain reads a dump stream to its end, handing each record to use.
func drain[T any](recv func() (T, error), what string, use func(T)) error {
	for {
		record, err := recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errors.Wrapf(err, "dumping %s", what)
		}
		use(record)
	}
}
