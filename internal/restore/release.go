package restore

import (
	"context"
	"errors"
	"strings"

	pkgerrors "github.com/pkg/errors"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/netnsid"
)

// Releaser removes what a journal record proves this forwarder made for a connection, and nothing
// else: VPP interfaces tagged with the ID of one of the record's connections (sdk-vpp tags each
// interface with its connection's ID, and only this forwarder's journal names those connections),
// forwarder-side veth ends whose alias names the record's client, and, through the kernel cleanup
// chain, the client namespace's rules and routes, in the recorded namespace only.
type Releaser struct {
	vppConn       api.Connection
	kernelCleanup networkservice.NetworkServiceServer
	// forwarderNetns works in the forwarder's own namespace, where the veth ends are.
	forwarderNetns *netlink.Handle
	vppEnded       func() bool
}

// NewReleaser releases through vppConn and, for kernel state in client namespaces, by closing the
// recorded connection on kernelCleanup (the chain's marked-route elements).
func NewReleaser(vppConn api.Connection, kernelCleanup networkservice.NetworkServiceServer, opts ...Option) *Releaser {
	o := &options{forwarderNetns: &netlink.Handle{}, vppEnded: func() bool { return false }}
	for _, opt := range opts {
		opt(o)
	}
	return &Releaser{vppConn: vppConn, kernelCleanup: kernelCleanup, forwarderNetns: o.forwarderNetns, vppEnded: o.vppEnded}
}

// Release removes everything rec names that is still there; it is a journal.Cleanup. The kernel
// state goes first, while the interface its routes leave through still exists.
func (r *Releaser) Release(ctx context.Context, rec *journal.Record) error {
	var errs []error
	for _, state := range rec.States() {
		errs = append(errs, r.closeRecorded(ctx, rec, state.Incoming))
	}
	view, err := readVPP(ctx, r.vppConn)
	switch {
	case err == nil:
		errs = append(errs, r.releaseInterfaces(ctx, view.tagged(rec.SideIDs())))
	case r.vppEnded():
		log.FromContext(ctx).Infof("restore: the VPP of connection %s has ended, and its interfaces with it", rec.ID)
	default:
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, r.releaseVeths(ctx, vethAliases(rec, true, true)))
	return errors.Join(errs...)
}

// releaseSide removes what rec names on one side of the connection: done before the chain builds
// that side again, which the old interfaces would collide with.
func (r *Releaser) releaseSide(ctx context.Context, rec *journal.Record, view *vppView, outgoing bool) error {
	tags := map[string]bool{}
	for _, state := range rec.States() {
		conn := state.Incoming
		if outgoing {
			conn = state.Outgoing
		}
		if conn.GetId() != "" {
			tags[conn.GetId()] = true
		}
	}
	if !outgoing {
		tags[rec.ID] = true
	}
	// Both sides may carry the same tag (a next hop that adds no path segment): the other side's
	// recorded interface is not this side's to release.
	var found []*vppInterface
	otherSide, recorded := rec.Committed.Side(!outgoing)
	for _, i := range view.tagged(tags) {
		if !recorded || otherSide.SwIfIndex != uint32(i.index) {
			found = append(found, i)
		}
	}
	return errors.Join(
		r.releaseInterfaces(ctx, found),
		r.releaseVeths(ctx, vethAliases(rec, !outgoing, outgoing)),
	)
}

// releaseInterfaces deletes in reverse order: VPP deletes an interface's cross-connects with it.
func (r *Releaser) releaseInterfaces(ctx context.Context, found []*vppInterface) error {
	var errs []error
	for n := len(found) - 1; n >= 0; n-- {
		i := found[n]
		if i.remove == nil {
			log.FromContext(ctx).Warnf("restore: leaving %s: unknown kind", i)
			continue
		}
		if err := i.remove(ctx); err != nil {
			errs = append(errs, pkgerrors.Wrapf(err, "deleting %s", i))
			continue
		}
		fwdmetrics.LeftoverReleased(ctx, kindName(i.kind))
		log.FromContext(ctx).Infof("restore: released %s", i)
	}
	return errors.Join(errs...)
}

// vethAliases are the aliases sdk-vpp's kernelvethpair gives the forwarder's end of a veth pair of
// the record's connections: "veth-server-<id>" toward the client, "veth-client-<id>" toward the
// endpoint, <id> being the client's own path segment ID. Only a side the record gives a kernel
// mechanism has one: the forwarders of both nodes of a connection name their ends by the same ID.
func vethAliases(rec *journal.Record, incoming, outgoing bool) map[string]bool {
	aliases := map[string]bool{}
	for _, state := range rec.States() {
		first := state.Incoming.GetPath().GetPathSegments()
		if len(first) == 0 || first[0].GetId() == "" {
			continue
		}
		if incoming && kernel.ToMechanism(state.Incoming.GetMechanism()) != nil {
			aliases["veth-server-"+first[0].GetId()] = true
		}
		if outgoing && kernel.ToMechanism(state.Outgoing.GetMechanism()) != nil {
			aliases["veth-client-"+first[0].GetId()] = true
		}
	}
	return aliases
}

// releaseVeths deletes the forwarder's veth ends carrying one of aliases; the kernel deletes the
// pod's end with it, wherever that namespace is now.
func (r *Releaser) releaseVeths(ctx context.Context, aliases map[string]bool) error {
	if len(aliases) == 0 {
		return nil
	}
	links, err := r.forwarderNetns.LinkList()
	if err != nil {
		return pkgerrors.Wrap(err, "listing the forwarder's links")
	}
	var errs []error
	for _, l := range links {
		if l.Type() != "veth" || !aliases[l.Attrs().Alias] {
			continue
		}
		if err := r.forwarderNetns.LinkDel(l); err != nil && !isNotFound(err) {
			errs = append(errs, pkgerrors.Wrapf(err, "deleting veth %s", l.Attrs().Name))
			continue
		}
		fwdmetrics.LeftoverReleased(ctx, fwdmetrics.KindVeth)
		log.FromContext(ctx).Infof("restore: released veth %s (%s)", l.Attrs().Name, l.Attrs().Alias)
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	var notFound netlink.LinkNotFoundError
	return errors.As(err, &notFound) || strings.Contains(err.Error(), "no such device")
}

// closeRecorded closes conn on the kernel cleanup chain in the namespace it was recorded in, and
// only there: the namespace is opened by its recorded identity, and the chain is handed that
// open namespace. A namespace that is gone, or whose inode now belongs to another namespace, took
// the connection's kernel state with it: nothing is done. Without a recorded identity nothing is
// done either: the namespace could not be told from another.
func (r *Releaser) closeRecorded(ctx context.Context, rec *journal.Record, conn *networkservice.Connection) error {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil || r.kernelCleanup == nil {
		return nil
	}
	recorded := mechanism.GetNetNSURL()
	identity, ok := rec.Namespaces[recorded]
	if !ok {
		log.FromContext(ctx).Warnf("restore: connection %s names namespace %s without its identity: its kernel state is not touched", rec.ID, recorded)
		return nil
	}
	if !identity.Proven() {
		log.FromContext(ctx).Warnf("restore: connection %s names namespace %s, which this kernel cannot identify beyond its inode (no SO_NETNS_COOKIE): its kernel state is not touched", rec.ID, recorded)
		return nil
	}
	ns, found, err := netnsid.Open(identity)
	if err != nil {
		return err
	}
	if !found {
		log.FromContext(ctx).Infof("restore: the namespace of connection %s (%s) is gone, and its kernel state with it", rec.ID, identity)
		return nil
	}
	defer func() { _ = ns.Close() }()
	opened := conn.Clone()
	kernel.ToMechanism(opened.GetMechanism()).SetNetNSURL(netnsid.FileURL(ns))
	detachUnrecordedLink(ctx, rec, recorded, opened)
	if _, err := r.kernelCleanup.Close(ctx, opened); err != nil {
		return pkgerrors.Wrapf(err, "removing the kernel state of connection %s", rec.ID)
	}
	fwdmetrics.LeftoverReleased(ctx, fwdmetrics.KindKernelState)
	log.FromContext(ctx).Infof("restore: released the kernel state of connection %s in %s", rec.ID, identity)
	return nil
}
