package restore

import (
	"context"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// recordedInterfaces are the VPP interfaces rec names on the chosen sides that VPP still shows as
// recorded (see proves), in the order VPP lists them. A recorded index that VPP now gives to
// something else is reported and left alone.
func recordedInterfaces(ctx context.Context, view *vppView, rec *journal.Record, incoming, outgoing bool) []*vppInterface {
	proven := map[interface_types.InterfaceIndex]bool{}
	for _, state := range rec.InterfaceStates() {
		for _, recorded := range state.Interfaces {
			if recorded.SwIfIndex == 0 || recorded.Outgoing && !outgoing || !recorded.Outgoing && !incoming {
				continue
			}
			conn := state.Incoming
			if recorded.Outgoing {
				conn = state.Outgoing
			}
			index := interface_types.InterfaceIndex(recorded.SwIfIndex)
			i, ok := view.byIndex[index]
			switch {
			case !ok:
			case proves(i, recorded, conn.GetMechanism()):
				proven[index] = true
			default:
				log.FromContext(ctx).Infof("restore: connection %s recorded sw_if_index %d (tag %q); VPP now shows %s of kind %s, left alone",
					rec.ID, recorded.SwIfIndex, recorded.Tag, i, kindName(i.kind))
			}
		}
	}
	var found []*vppInterface
	for _, i := range view.ordered {
		if proven[i.index] {
			found = append(found, i)
		}
	}
	return found
}

// proves is whether i is the interface recorded: its recorded tag, the kind of interface the
// side's mechanism makes and, for a kernel interface, the host interface recorded (the veth end
// an af_packet binds, or the tap's side in the pod).
func proves(i *vppInterface, recorded journal.Interface, mechanism *networkservice.Mechanism) bool {
	if recorded.Tag == "" || i.tag != recorded.Tag {
		return false
	}
	switch mechanism.GetType() {
	case kernel.MECHANISM:
		if recorded.Peer != nil {
			return i.kind == kindAfPacket && i.hostIfName == recorded.Peer.Name
		}
		name := kernel.ToMechanism(mechanism).GetInterfaceName()
		if recorded.Link != nil {
			name = recorded.Link.Name
		}
		return i.kind == kindTap && name != "" && i.hostIfName == name
	case vxlanmech.MECHANISM:
		return i.kind == kindVxlan && i.vxlanVNI == vxlanmech.ToMechanism(mechanism).VNI()
	case memif.MECHANISM:
		return i.kind == kindMemif
	case wireguard.MECHANISM:
		return i.kind == kindWireguard
	case ipsec.MECHANISM:
		// sdk-vpp's ipsec mechanism makes a route-based IPsec interface (ipsec_itf).
		return i.kind == kindIpsec
	case vlanmech.MECHANISM:
		// sdk-vpp's vlan client makes a sub-interface of the uplink for the next hop's side.
		return i.kind == kindSubinterface
	default:
		return false
	}
}

// recordedPeers are the forwarder's veth ends rec names on the chosen sides.
func recordedPeers(rec *journal.Record, incoming, outgoing bool) []*journal.Link {
	seen := map[journal.Link]bool{}
	var peers []*journal.Link
	for _, state := range rec.InterfaceStates() {
		for _, recorded := range state.Interfaces {
			if recorded.Peer == nil || recorded.Outgoing && !outgoing || !recorded.Outgoing && !incoming || seen[*recorded.Peer] {
				continue
			}
			seen[*recorded.Peer] = true
			peers = append(peers, recorded.Peer)
		}
	}
	return peers
}
