package restore

import (
	"context"
	"net"

	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/l3xc"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
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

// XConnect is one cross-connect from a VPP interface: l2xc to another interface, or l3xc of one
// IP family through one path's interface.
type XConnect struct {
	Kind string `json:"kind"` // "l2xc", "l3xc ip4", "l3xc ip6"
	To   uint32 `json:"to"`
}

// ReadXConnects reads VPP's l2 and l3 cross-connects by the interface they start from, with dumps
// only. A VPP without the l3xc plugin has no l3 cross-connects.
func ReadXConnects(ctx context.Context, vppConn api.Connection) (map[uint32][]XConnect, error) {
	out := map[uint32][]XConnect{}
	l2Stream, err := l2.NewServiceClient(vppConn).L2XconnectDump(ctx, &l2.L2XconnectDump{})
	if err == nil {
		err = vppdump.Drain(l2Stream.Recv, "l2 cross-connects", func(d *l2.L2XconnectDetails) {
			out[uint32(d.RxSwIfIndex)] = append(out[uint32(d.RxSwIfIndex)], XConnect{Kind: "l2xc", To: uint32(d.TxSwIfIndex)})
		})
	}
	if err != nil {
		return nil, err
	}
	l3Stream, err := l3xc.NewServiceClient(vppConn).L3xcDump(ctx, &l3xc.L3xcDump{SwIfIndex: anyIndex})
	if err != nil {
		return out, nil
	}
	err = vppdump.Drain(l3Stream.Recv, "l3 cross-connects", func(d *l3xc.L3xcDetails) {
		kind := "l3xc ip4"
		if d.L3xc.IsIP6 {
			kind = "l3xc ip6"
		}
		for _, path := range d.L3xc.Paths {
			out[uint32(d.L3xc.SwIfIndex)] = append(out[uint32(d.L3xc.SwIfIndex)], XConnect{Kind: kind, To: path.SwIfIndex})
		}
	})
	return out, err
}
