package restore

import (
	"context"
	"errors"
	"slices"

	pkgerrors "github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// kindIKEv2Profile names a released IKEv2 profile in metrics.
const kindIKEv2Profile = "ikev2_profile"

// ikev2ProfileNames are the IKEv2 profiles sdk-vpp's ipsec mechanism made for rec on the chosen
// sides: it names each after the side's connection, "client-<ID>" toward the next hop and
// "server-<ID>" toward the client, and deletes it only on a Close it sees, so a previous run's
// stays in VPP, and a rebuilt side's Request would fail on the name still taken.
func ikev2ProfileNames(rec *journal.Record, incoming, outgoing bool) []string {
	var names []string
	add := func(prefix string, conn *networkservice.Connection) {
		if conn.GetMechanism().GetType() != ipsecmech.MECHANISM || conn.GetId() == "" {
			return
		}
		if name := prefix + conn.GetId(); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, state := range rec.InterfaceStates() {
		if incoming {
			add("server-", state.Incoming)
		}
		if outgoing {
			add("client-", state.Outgoing)
		}
	}
	return names
}

// releaseIKEv2Profiles deletes the profiles of ikev2ProfileNames that VPP holds.
func (r *Releaser) releaseIKEv2Profiles(ctx context.Context, rec *journal.Record, incoming, outgoing bool) error {
	names := ikev2ProfileNames(rec, incoming, outgoing)
	if len(names) == 0 {
		return nil
	}
	held, err := r.ikev2Profiles(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if !held[name] {
			continue
		}
		if _, err := ikev2.NewServiceClient(r.vppConn).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: name, IsAdd: false}); err != nil {
			errs = append(errs, pkgerrors.Wrapf(err, "deleting IKEv2 profile %s", name))
			continue
		}
		fwdmetrics.LeftoverReleased(ctx, kindIKEv2Profile)
		log.FromContext(ctx).Infof("restore: released IKEv2 profile %s of connection %s", name, rec.ID)
	}
	return errors.Join(errs...)
}

// ikev2Profiles are the names of the IKEv2 profiles VPP holds.
func (r *Releaser) ikev2Profiles(ctx context.Context) (map[string]bool, error) {
	stream, err := ikev2.NewServiceClient(r.vppConn).Ikev2ProfileDump(ctx, &ikev2.Ikev2ProfileDump{})
	if err != nil {
		return nil, pkgerrors.Wrap(err, "dumping IKEv2 profiles")
	}
	held := map[string]bool{}
	err = vppdump.Drain(stream.Recv, "IKEv2 profiles", func(d *ikev2.Ikev2ProfileDetails) { held[d.Profile.Name] = true })
	return held, err
}
