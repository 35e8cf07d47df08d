package restore

import (
	"context"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// vethAliasPrefixes start the aliases sdk-vpp's kernelvethpair gives the forwarder's end of a veth.
var vethAliasPrefixes = []string{"veth-client-", "veth-server-"}

// VethConnectionID is the client's path segment ID a veth end's alias names, when sdk-vpp's
// kernelvethpair made it: the forwarder's end of a pair toward a client or an endpoint.
func VethConnectionID(l netlink.Link) (string, bool) {
	if l.Type() != "veth" {
		return "", false
	}
	for _, prefix := range vethAliasPrefixes {
		if id, ok := strings.CutPrefix(l.Attrs().Alias, prefix); ok {
			return id, true
		}
	}
	return "", false
}

// Scan turns the connections the journal holds into leftovers: called once at start-up, before the
// forwarder serves its first Request, every record belongs to a previous run. kernelTaps says
// whether kernel interfaces are taps (else veth pairs), which decides what can be adopted.
//
// Whatever VPP or the forwarder's namespace holds that no record names by its index and identity
// (interfaces tagged by another agent sharing VPP, veth ends with a look-alike alias, another
// hop's veth with the same alias) is reported and left alone, for good: only what the journal
// proves is this forwarder's is ever released.
func Scan(ctx context.Context, releaser *Releaser, j *journal.Journal, kernelTaps bool) (*Leftovers, error) {
	l := &Leftovers{journal: j, releaser: releaser, adopter: &adopter{releaser: releaser, taps: kernelTaps}, byID: map[string]*leftover{}}
	var records []*journal.Record
	for _, rec := range j.Records() {
		l.byID[rec.ID] = &leftover{rec: rec}
		records = append(records, rec)
	}
	view, err := readVPP(ctx, releaser.vppConn)
	if err != nil {
		return nil, err
	}
	fwdmetrics.LeftoversFound(ctx, fwdmetrics.KindConnection, len(records))
	recorded := map[*vppInterface]bool{}
	recordedVeths := map[journal.Link]bool{}
	for _, rec := range records {
		for _, i := range recordedInterfaces(ctx, view, rec, true, true) {
			recorded[i] = true
		}
		for _, peer := range recordedPeers(rec, true, true) {
			recordedVeths[*peer] = true
		}
	}
	var foreign []string
	for _, i := range view.ordered {
		switch {
		case recorded[i]:
			fwdmetrics.LeftoversFound(ctx, kindName(i.kind), 1)
		case i.tag != "":
			foreign = append(foreign, i.String())
		}
	}
	links, err := releaser.forwarderNetns.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		_, aliased := VethConnectionID(l)
		switch {
		case recordedVeths[journal.Link{Name: l.Attrs().Name, Index: l.Attrs().Index, MAC: l.Attrs().HardwareAddr.String()}]:
			fwdmetrics.LeftoversFound(ctx, fwdmetrics.KindVeth, 1)
		case aliased:
			foreign = append(foreign, "veth "+l.Attrs().Name+" (alias "+l.Attrs().Alias+")")
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		log.FromContext(ctx).Infof("restore: not in the journal, so not this forwarder's, left alone: %s", strings.Join(foreign, "; "))
	}
	return l, nil
}
