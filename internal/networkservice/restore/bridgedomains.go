package restore

import (
	"context"
	"errors"
	"fmt"

	pkgerrors "github.com/pkg/errors"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// kindBridgeDomain names a released bridge domain in metrics.
const kindBridgeDomain = "bridge_domain"

// releaseBridgeDomains deletes each bridge domain rec names that VPP shows without members, once
// rec's interfaces are released. A domain with a member is left: another connection of the same
// VLAN (recorded or this run's) still bridges through it, or it is not this forwarder's; that
// connection's release deletes it. A domain VPP no longer has is done with.
func (r *Releaser) releaseBridgeDomains(ctx context.Context, rec *journal.Record) error {
	var errs []error
	for _, id := range rec.BridgeDomains() {
		members, exists, err := r.bridgeDomainMembers(ctx, id)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case !exists:
			continue
		case len(members) > 0:
			log.FromContext(ctx).Infof("restore: connection %s recorded bridge domain %d; it still has members %v, left alone", rec.ID, id, members)
			continue
		}
		if _, err := l2.NewServiceClient(r.vppConn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{IsAdd: false, BdID: id}); err != nil {
			errs = append(errs, pkgerrors.Wrapf(err, "deleting bridge domain %d", id))
			continue
		}
		fwdmetrics.LeftoverReleased(ctx, kindBridgeDomain)
		log.FromContext(ctx).Infof("restore: released bridge domain %d of connection %s", id, rec.ID)
	}
	return errors.Join(errs...)
}

// bridgeDomainMembers are the interfaces VPP shows in bridge domain id, and whether it has it.
func (r *Releaser) bridgeDomainMembers(ctx context.Context, id uint32) (members []interface_types.InterfaceIndex, exists bool, err error) {
	stream, err := l2.NewServiceClient(r.vppConn).BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: id, SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return nil, false, pkgerrors.Wrapf(err, "dumping bridge domain %d", id)
	}
	err = vppdump.Drain(stream.Recv, fmt.Sprintf("bridge domain %d", id), func(details *l2.BridgeDomainDetails) {
		if details.BdID != id {
			return
		}
		exists = true
		for _, member := range details.SwIfDetails {
			members = append(members, member.SwIfIndex)
		}
	})
	if err != nil {
		return nil, false, err
	}
	return members, exists, nil
}
