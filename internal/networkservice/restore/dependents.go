package restore

import (
	"context"

	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/l3xcreset"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// withoutDependents removes what VPP v24.10 does not remove with a deleted interface before remove
// deletes it, as sdk-vpp's elements do on Close:
//   - its static IP neighbours: with one left on a deleted interface, the next deletion of a
//     neighbour with the same IP on another interface (the same connection rebuilt, then closed)
//     crashes VPP with SIGSEGV;
//   - its L3 cross-connects, which VPP keeps as "DELETED" policies.
func withoutDependents(vppConn api.Connection, index interface_types.InterfaceIndex, remove deleter) deleter {
	return func(ctx context.Context) error {
		if err := deleteStaticNeighbors(ctx, vppConn, index); err != nil {
			return err
		}
		if err := l3xcreset.Delete(ctx, vppConn, index); err != nil {
			return err
		}
		return remove(ctx)
	}
}

func deleteStaticNeighbors(ctx context.Context, vppConn api.Connection, index interface_types.InterfaceIndex) error {
	var static []ip_neighbor.IPNeighbor
	for _, family := range []ip_types.AddressFamily{ip_types.ADDRESS_IP4, ip_types.ADDRESS_IP6} {
		stream, err := ip_neighbor.NewServiceClient(vppConn).IPNeighborDump(ctx, &ip_neighbor.IPNeighborDump{SwIfIndex: index, Af: family})
		if err != nil {
			return err
		}
		if err = vppdump.Drain(stream.Recv, "IP neighbours", func(d *ip_neighbor.IPNeighborDetails) {
			if d.Neighbor.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0 && d.Neighbor.SwIfIndex == index {
				static = append(static, d.Neighbor)
			}
		}); err != nil {
			return err
		}
	}
	for _, neighbor := range static {
		if _, err := ip_neighbor.NewServiceClient(vppConn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{Neighbor: neighbor}); err != nil {
			return err
		}
	}
	return nil
}
