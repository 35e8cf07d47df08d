package restore

import (
	"context"
	"net"

	"go.fd.io/govpp/api"
)

// VPPInterface is one VPP interface as the start-up scan sees it, for an operator's report.
type VPPInterface struct {
	SwIfIndex uint32 `json:"swIfIndex"`
	Name      string `json:"name"`
	Tag       string `json:"tag,omitempty"`
	// Kind is what the per-kind dumps say (tap, af_packet, vxlan, memif, wireguard, ipip,
	// subinterface), "unknown" when none does.
	Kind string `json:"kind"`
	// HostIfName is the kernel side of a tap or an af_packet interface.
	HostIfName string `json:"hostIfName,omitempty"`
	// VxlanSrc, VxlanDst and VxlanVNI describe a vxlan tunnel.
	VxlanSrc net.IP `json:"vxlanSrc,omitempty"`
	VxlanDst net.IP `json:"vxlanDst,omitempty"`
	VxlanVNI uint32 `json:"vxlanVni,omitempty"`
}

// ReadVPPInterfaces reads every interface VPP holds with the dumps the start-up scan makes, and
// only dumps: it changes nothing.
func ReadVPPInterfaces(ctx context.Context, vppConn api.Connection) ([]VPPInterface, error) {
	view, err := readVPP(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	out := make([]VPPInterface, 0, len(view.ordered))
	for _, i := range view.ordered {
		out = append(out, VPPInterface{SwIfIndex: uint32(i.index), Name: i.name, Tag: i.tag, Kind: kindName(i.kind),
			HostIfName: i.hostIfName, VxlanSrc: i.vxlanSrc, VxlanDst: i.vxlanDst, VxlanVNI: i.vxlanVNI})
	}
	return out, nil
}
