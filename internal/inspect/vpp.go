package inspect

import (
	"context"
	"fmt"

	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/l3xc"

	"github.com/nsmfwd/forwarder-vpp/internal/restore"
)

// vppState is what VPP holds: its interfaces by index, and each interface's cross-connects.
type vppState struct {
	interfaces []restore.VPPInterface
	byIndex    map[uint32]restore.VPPInterface
	xconnects  map[uint32][]string
}

func readVPPState(ctx context.Context, vppConn api.Connection) (*vppState, error) {
	interfaces, err := restore.ReadVPPInterfaces(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	s := &vppState{interfaces: interfaces, byIndex: map[uint32]restore.VPPInterface{}, xconnects: map[uint32][]string{}}
	for _, i := range interfaces {
		s.byIndex[i.SwIfIndex] = i
	}
	l2Stream, err := l2.NewServiceClient(vppConn).L2XconnectDump(ctx, &l2.L2XconnectDump{})
	if err != nil {
		return nil, fmt.Errorf("dumping l2 cross-connects: %w", err)
	}
	for {
		d, err := l2Stream.Recv()
		if err != nil {
			break
		}
		s.xconnects[uint32(d.RxSwIfIndex)] = append(s.xconnects[uint32(d.RxSwIfIndex)], "l2xc to "+s.name(uint32(d.TxSwIfIndex)))
	}
	l3Stream, err := l3xc.NewServiceClient(vppConn).L3xcDump(ctx, &l3xc.L3xcDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err == nil {
		for {
			d, err := l3Stream.Recv()
			if err != nil {
				break
			}
			family := "ip4"
			if d.L3xc.IsIP6 {
				family = "ip6"
			}
			for _, path := range d.L3xc.Paths {
				index := uint32(d.L3xc.SwIfIndex)
				s.xconnects[index] = append(s.xconnects[index], fmt.Sprintf("l3xc %s to %s", family, s.name(path.SwIfIndex)))
			}
		}
	}
	return s, nil
}

func (s *vppState) name(index uint32) string {
	if i, ok := s.byIndex[index]; ok {
		return fmt.Sprintf("%s (%d)", i.Name, index)
	}
	return fmt.Sprint(index)
}

// tagged lists the interfaces whose tag is one of tags.
func (s *vppState) tagged(tags map[string]bool) []VPPInterface {
	var out []VPPInterface
	for _, i := range s.interfaces {
		if i.Tag != "" && tags[i.Tag] {
			out = append(out, VPPInterface{VPPInterface: i, XConnects: s.xconnects[i.SwIfIndex]})
		}
	}
	return out
}
