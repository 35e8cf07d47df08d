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
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/l3xcreset"
)

// Releaser removes what a journal record proves this forwarder made for a connection, and nothing
// else. A VPP interface is released only when the record names it by its sw_if_index and VPP
// still shows it as recorded: the recorded tag, the kind the side's mechanism makes, and the
// host interface the record names (sdk-vpp tags with the bare connection ID, which the wire
// chooses, so a tag alone proves nothing). A veth end only when the record names it by its
// ifindex, name and MAC (every hop of a local chain gives its ends the same alias). Kernel state
// in a client namespace only through the kernel cleanup chain, in the recorded namespace.
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
		errs = append(errs, r.releaseInterfaces(ctx, r.ownedInterfaces(ctx, view, rec, true, true)))
		// Once the interfaces are gone: a bridge domain with members is left alone, and an IKEv2
		// profile protected the IPsec interface.
		errs = append(errs, r.releaseBridgeDomains(ctx, rec), r.releaseIKEv2Profiles(ctx, rec, true, true))
	case r.vppEnded():
		log.FromContext(ctx).Infof("restore: the VPP of connection %s has ended, and its interfaces with it", rec.ID)
	default:
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, r.releaseVeths(ctx, rec, recordedPeers(rec, true, true)))
	return errors.Join(errs...)
}

// releaseSide removes what rec names on one side of the connection: done before the chain builds
// that side again, which the old interfaces would collide with.
func (r *Releaser) releaseSide(ctx context.Context, rec *journal.Record, view *vppView, outgoing bool) error {
	return errors.Join(
		r.releaseInterfaces(ctx, r.ownedInterfaces(ctx, view, rec, !outgoing, outgoing)),
		r.releaseIKEv2Profiles(ctx, rec, !outgoing, outgoing),
		r.releaseVeths(ctx, rec, recordedPeers(rec, !outgoing, outgoing)),
	)
}

// ownedInterfaces are recordedInterfaces and, for each veth end rec names on the chosen sides that
// is still in the forwarder's namespace with its recorded name and MAC, the af_packet interfaces
// VPP binds to it that carry the recorded tag or none. sdk-vpp creates an af_packet before it
// tags it: a forwarder killed in between leaves one that only its host interface, a veth end this
// forwarder made and recorded before making it, proves its own.
func (r *Releaser) ownedInterfaces(ctx context.Context, view *vppView, rec *journal.Record, incoming, outgoing bool) []*vppInterface {
	found := recordedInterfaces(ctx, view, rec, incoming, outgoing)
	taken := map[interface_types.InterfaceIndex]bool{}
	for _, i := range found {
		taken[i.index] = true
	}
	for _, state := range rec.InterfaceStates() {
		for _, recorded := range state.Interfaces {
			if recorded.Peer == nil || recorded.Outgoing && !outgoing || !recorded.Outgoing && !incoming || !r.holdsVeth(recorded.Peer) {
				continue
			}
			for _, i := range view.ordered {
				if !taken[i.index] && i.kind == kindAfPacket && i.hostIfName == recorded.Peer.Name && (i.tag == "" || i.tag == recorded.Tag) {
					taken[i.index] = true
					found = append(found, i)
				}
			}
		}
	}
	return found
}

// holdsVeth is whether the forwarder's namespace has the recorded veth end, by name and MAC.
func (r *Releaser) holdsVeth(recorded *journal.Link) bool {
	l, err := r.forwarderNetns.LinkByName(recorded.Name)
	return err == nil && l.Type() == "veth" && recorded.MAC != "" && l.Attrs().HardwareAddr.String() == recorded.MAC
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

// resetL3xc deletes the IP cross-connects VPP holds on the interfaces found, which stay.
func (r *Releaser) resetL3xc(ctx context.Context, found []*vppInterface) error {
	indexes := make([]interface_types.InterfaceIndex, 0, len(found))
	for _, i := range found {
		indexes = append(indexes, i.index)
	}
	return l3xcreset.Delete(ctx, r.vppConn, indexes...)
}

// releaseVeths deletes the forwarder's veth ends the record names, each found by its recorded
// ifindex and taken only when its name and MAC are still the recorded ones; the kernel deletes the
// pod's end with it, wherever that namespace is now. An end recorded before its pair was made
// (vethpair) has no ifindex yet: it is found by its recorded name, and taken only with its
// recorded MAC, both chosen by the forwarder.
func (r *Releaser) releaseVeths(ctx context.Context, rec *journal.Record, peers []*journal.Link) error {
	var errs []error
	for _, recorded := range peers {
		var l netlink.Link
		var err error
		switch {
		case recorded.Index != 0:
			l, err = r.forwarderNetns.LinkByIndex(recorded.Index)
		case recorded.MAC != "":
			l, err = r.forwarderNetns.LinkByName(recorded.Name)
		default:
			continue
		}
		switch {
		case err != nil && isNotFound(err):
			continue
		case err != nil:
			errs = append(errs, pkgerrors.Wrapf(err, "looking up veth %s", recorded.Name))
			continue
		case l.Type() != "veth" || l.Attrs().Name != recorded.Name || l.Attrs().HardwareAddr.String() != recorded.MAC:
			log.FromContext(ctx).Infof("restore: connection %s recorded veth %s (ifindex %d, %s); ifindex %d is now %s %s (%s), left alone",
				rec.ID, recorded.Name, recorded.Index, recorded.MAC, recorded.Index, l.Type(), l.Attrs().Name, l.Attrs().HardwareAddr)
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
