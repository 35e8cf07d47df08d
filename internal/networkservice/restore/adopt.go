package restore

import (
	"context"
	"errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	kernellink "github.com/networkservicemesh/sdk-kernel/pkg/kernel"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/peer"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/link"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// adopter hands what a previous run built for one side of a connection back to sdk-vpp's
// elements, when it is exactly what the connection asks for now; otherwise it releases it, so that
// the chain builds that side again on a clean slate.
type adopter struct {
	releaser *Releaser
	// taps is true when kernel interfaces are taps, false for veth pairs.
	taps bool
}

// side adopts or releases what rec holds for one side of conn: the client's side (outgoing false,
// sdk-vpp's server metadata) with the Request's connection, the next hop's side with its answer.
func (a *adopter) side(ctx context.Context, rec *journal.Record, conn *networkservice.Connection, outgoing bool) {
	logger := log.FromContext(ctx)
	name := sideName(outgoing)
	why := a.adopt(ctx, rec, conn, outgoing)
	if why == "" {
		fwdmetrics.LeftoverAdopted(ctx, a.kindFor(conn.GetMechanism()))
		logger.Infof("restore: connection %s is back, its %s side is adopted as the previous run left it", rec.ID, name)
		return
	}
	logger.Infof("restore: connection %s is back, its %s side is rebuilt: %s", rec.ID, name, why)
	var kernelErr error
	if !outgoing && conn.GetId() != rec.ID {
		kernelErr = a.releaseClientKernelState(ctx, rec)
	}
	view, err := readVPP(ctx, a.releaser.vppConn)
	if err == nil {
		// The other side may be adopted: its IP cross-connect toward the side rebuilt here goes,
		// and sdk-vpp's l3xconnect makes it afresh (package l3xcreset says why).
		err = a.releaser.resetL3xc(ctx, recordedInterfaces(ctx, view, rec, outgoing, !outgoing))
		err = errors.Join(err, a.releaser.releaseSide(ctx, rec, view, outgoing))
	}
	if err = errors.Join(kernelErr, err); err != nil {
		logger.Warnf("restore: releasing the %s side of connection %s before it is rebuilt: %v", name, rec.ID, err)
	}
}

// releaseClientKernelState removes the marked rules and routes every recorded state put in the
// client's namespace, while the interface their routes leave through is still there. It is for a
// connection back under another ID (the forwarder came back under another name, so its segment
// got a new one; see journal.Hop): the rebuild takes the interface and with it the routes of
// the recorded tables, and their rules would stay behind, since policyroute finds a connection's
// rules by the tables its ID hashes to, and the record naming the old ID is dropped once the
// Request succeeds. Under the same ID the chain reconciles what the kernel holds by itself.
func (a *adopter) releaseClientKernelState(ctx context.Context, rec *journal.Record) error {
	var errs []error
	for _, state := range rec.States() {
		errs = append(errs, a.releaser.closeRecorded(ctx, rec, state.Incoming))
	}
	return errors.Join(errs...)
}

func sideName(outgoing bool) string {
	if outgoing {
		return "next hop's"
	}
	return "client's"
}

// adopt checks every recorded fact of one side against what VPP, the kernel and the connection
// say now, and only when all hold puts the side's interfaces into sdk-vpp's metadata, as if this
// run had created them. It returns why it did not.
func (a *adopter) adopt(ctx context.Context, rec *journal.Record, conn *networkservice.Connection, outgoing bool) string {
	if rec.Committed == nil {
		return "the previous run never completed it"
	}
	previous := rec.Committed.Incoming
	if outgoing {
		previous = rec.Committed.Outgoing
	}
	recorded, ok := rec.Committed.Side(outgoing)
	switch {
	case !ok || recorded.SwIfIndex == 0:
		return "no VPP interface was recorded"
	case previous.GetMechanism().GetType() != conn.GetMechanism().GetType():
		return "the mechanism changed"
	case outgoing && conn.GetId() != recorded.Tag:
		return "the next hop answered for another connection"
	}
	iface, err := readInterface(ctx, a.releaser.vppConn, interface_types.InterfaceIndex(recorded.SwIfIndex), a.kindFor(conn.GetMechanism()))
	if err != nil {
		return "VPP cannot be read: " + err.Error()
	}
	if iface == nil || iface.tag != recorded.Tag {
		return "VPP no longer holds the recorded interface"
	}
	switch conn.GetMechanism().GetType() {
	case kernel.MECHANISM:
		return a.adoptKernel(ctx, rec, recorded, kernel.ToMechanism(conn.GetMechanism()), outgoing, iface)
	case vxlanmech.MECHANISM:
		return adoptVxlan(ctx, vxlanmech.ToMechanism(conn.GetMechanism()), outgoing, iface)
	default:
		return "its mechanism is never adopted"
	}
}

// kindFor is the kind of VPP interface this forwarder makes for a mechanism.
func (a *adopter) kindFor(mechanism *networkservice.Mechanism) string {
	switch {
	case mechanism.GetType() == vxlanmech.MECHANISM:
		return kindVxlan
	case a.taps:
		return kindTap
	default:
		return kindAfPacket
	}
}

func (a *adopter) adoptKernel(ctx context.Context, rec *journal.Record, recorded journal.Interface, mechanism *kernel.Mechanism, outgoing bool, iface *vppInterface) string {
	if recorded.Link == nil || mechanism.GetVLAN() != 0 {
		return "no kernel interface was recorded"
	}
	identity, ok := rec.Namespaces[recorded.Link.Netns]
	if !ok {
		return "the namespace's identity was not recorded"
	}
	if current, err := netnsid.OfURL(mechanism.GetNetNSURL()); err != nil || current != identity {
		return "the connection names another namespace"
	}
	if mechanism.GetInterfaceName() != recorded.Link.Name {
		return "the connection names another interface"
	}
	handle, err := kernellink.GetNetlinkHandle(mechanism.GetNetNSURL())
	if err != nil {
		return err.Error()
	}
	defer handle.Close()
	podLink, err := handle.LinkByName(recorded.Link.Name)
	if err != nil || podLink.Attrs().Index != recorded.Link.Index || podLink.Attrs().HardwareAddr.String() != recorded.Link.MAC {
		return "the pod's interface is not the recorded one"
	}
	if a.taps {
		if iface.kind != kindTap || iface.hostIfName != recorded.Link.Name {
			return "VPP's interface is not the recorded tap"
		}
		ifindex.Store(ctx, outgoing, iface.index)
		return ""
	}
	if recorded.Peer == nil || iface.kind != kindAfPacket || iface.hostIfName != recorded.Peer.Name {
		return "VPP's interface is not the recorded veth's af_packet"
	}
	peerLink, err := a.releaser.forwarderNetns.LinkByIndex(recorded.Peer.Index)
	if err != nil || peerLink.Attrs().Name != recorded.Peer.Name || peerLink.Attrs().HardwareAddr.String() != recorded.Peer.MAC {
		return "the forwarder's end of the veth pair is not the recorded one"
	}
	ifindex.Store(ctx, outgoing, iface.index)
	link.Store(ctx, outgoing, podLink)
	peer.Store(ctx, outgoing, peerLink)
	return ""
}

// adoptVxlan adopts a tunnel that goes where the mechanism says: from the mechanism's source to
// its destination on the client's side of the next hop, the other way round on the server's side.
func adoptVxlan(ctx context.Context, mechanism *vxlanmech.Mechanism, outgoing bool, iface *vppInterface) string {
	src, dst := mechanism.SrcIP(), mechanism.DstIP()
	if !outgoing {
		src, dst = dst, src
	}
	if iface.kind != kindVxlan || !iface.vxlanSrc.Equal(src) || !iface.vxlanDst.Equal(dst) || iface.vxlanVNI != mechanism.VNI() {
		return "VPP's tunnel is not the one the connection describes"
	}
	ifindex.Store(ctx, outgoing, iface.index)
	return ""
}
