package inspect

import (
	"context"
	"fmt"

	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/restore"
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
	xconnects, err := restore.ReadXConnects(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	for from, list := range xconnects {
		for _, xc := range list {
			s.xconnects[from] = append(s.xconnects[from], xc.Kind+" to "+s.name(xc.To))
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

// tagged lists the interfaces tagged tag, but for the one at index except (0: none).
func (s *vppState) tagged(tag string, except uint32) []VPPInterface {
	var out []VPPInterface
	for _, i := range s.interfaces {
		if i.Tag == tag && tag != "" && (except == 0 || i.SwIfIndex != except) {
			out = append(out, VPPInterface{VPPInterface: i, XConnects: s.xconnects[i.SwIfIndex]})
		}
	}
	return out
}
