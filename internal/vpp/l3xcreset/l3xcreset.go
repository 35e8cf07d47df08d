package l3xcreset

import (
	"context"
	"errors"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	pkgerrors "github.com/pkg/errors"
	"go.fd.io/govpp/api"
)

// Delete deletes the l3xc VPP holds on each of the given interfaces, in both families. It asks
// for each family rather than dumping first: VPP v24.10's l3xc_details never sets is_ip6.
func Delete(ctx context.Context, vppConn api.Connection, swIfIndexes ...interface_types.InterfaceIndex) error {
	var errs []error
	done := map[interface_types.InterfaceIndex]bool{}
	for _, index := range swIfIndexes {
		if done[index] {
			continue
		}
		done[index] = true
		for _, ipv6 := range []bool{false, true} {
			_, err := l3xc.NewServiceClient(vppConn).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: index, IsIP6: ipv6})
			// INVALID_VALUE: the interface has no l3xc of that family.
			if err != nil && !errors.Is(err, api.INVALID_VALUE) {
				errs = append(errs, pkgerrors.Wrapf(err, "deleting the l3xc of sw_if_index %d (IPv6: %t)", index, ipv6))
			}
		}
	}
	return errors.Join(errs...)
}
