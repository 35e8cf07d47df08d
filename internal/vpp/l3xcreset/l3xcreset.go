package l3xcreset

import (
	"context"
	"errors"
	"io"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	pkgerrors "github.com/pkg/errors"
	"go.fd.io/govpp/api"
)

// Delete deletes every l3xc VPP holds on the given interfaces, in both families.
func Delete(ctx context.Context, vppConn api.Connection, swIfIndexes ...interface_types.InterfaceIndex) error {
	wanted := map[interface_types.InterfaceIndex]bool{}
	for _, index := range swIfIndexes {
		wanted[index] = true
	}
	if len(wanted) == 0 {
		return nil
	}
	held, err := dump(ctx, vppConn)
	if err != nil {
		return err
	}
	var errs []error
	for _, x := range held {
		if !wanted[x.SwIfIndex] {
			continue
		}
		if _, err := l3xc.NewServiceClient(vppConn).L3xcDel(ctx, &l3xc.L3xcDel{SwIfIndex: x.SwIfIndex, IsIP6: x.IsIP6}); err != nil {
			errs = append(errs, pkgerrors.Wrapf(err, "deleting the l3xc of sw_if_index %d (IPv6: %t)", x.SwIfIndex, x.IsIP6))
		}
	}
	return errors.Join(errs...)
}

// dump lists every l3xc VPP holds.
func dump(ctx context.Context, vppConn api.Connection) ([]l3xc.L3xc, error) {
	stream, err := l3xc.NewServiceClient(vppConn).L3xcDump(ctx, &l3xc.L3xcDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return nil, pkgerrors.Wrap(err, "dumping l3xc cross-connects")
	}
	var held []l3xc.L3xc
	for {
		details, err := stream.Recv()
		if err == io.EOF {
			return held, nil
		}
		if err != nil {
			return nil, pkgerrors.Wrap(err, "dumping l3xc cross-connects")
		}
		held = append(held, details.L3xc)
	}
}
