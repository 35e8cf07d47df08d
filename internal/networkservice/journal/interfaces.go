package journal

import (
	"context"
	"net/url"

	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	kernellink "github.com/networkservicemesh/sdk-kernel/pkg/kernel"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/peer"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/link"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
)

// collectInterfaces reads what sdk-vpp's elements hold for each side of a connection that just
// succeeded: the VPP interface (ifindex metadata), the pod's kernel interface and, for a veth pair,
// the forwarder's end (link and peer metadata). A tap's host side is looked up in the pod's
// namespace, once: a refresh that kept the VPP interface reuses what the record has.
func collectInterfaces(ctx context.Context, incoming, outgoing *networkservice.Connection, committed *State) []Interface {
	var interfaces []Interface
	for _, side := range []struct {
		outgoing bool
		conn     *networkservice.Connection
	}{{false, incoming}, {true, outgoing}} {
		if i, ok := sideInterface(ctx, side.outgoing, side.conn, committed); ok {
			interfaces = append(interfaces, i)
		}
	}
	return interfaces
}

// sideInterface is what sdk-vpp's elements hold for one side of conn, if anything.
func sideInterface(ctx context.Context, outgoing bool, conn *networkservice.Connection, committed *State) (Interface, bool) {
	if conn == nil {
		return Interface{}, false
	}
	i := Interface{Outgoing: outgoing, Tag: conn.GetId()}
	if swIfIndex, ok := ifindex.Load(ctx, outgoing); ok {
		i.SwIfIndex = uint32(swIfIndex)
	}
	if mechanism := kernel.ToMechanism(conn.GetMechanism()); mechanism != nil {
		i.Link = podLink(ctx, outgoing, mechanism, i.SwIfIndex, committed)
		if p, ok := peer.Load(ctx, outgoing); ok && p != nil && p.Attrs() != nil {
			i.Peer = &Link{Name: p.Attrs().Name, Index: p.Attrs().Index, MAC: p.Attrs().HardwareAddr.String()}
		}
	}
	return i, i.SwIfIndex != 0 || i.Link != nil || i.Peer != nil
}

func podLink(ctx context.Context, outgoing bool, mechanism *kernel.Mechanism, swIfIndex uint32, committed *State) *Link {
	netnsURL := inodeURLOf(mechanism.GetNetNSURL())
	if recorded, ok := committed.Side(outgoing); ok && recorded.Link != nil && recorded.SwIfIndex == swIfIndex &&
		recorded.Link.Name == mechanism.GetInterfaceName() && recorded.Link.Netns == netnsURL {
		return recorded.Link
	}
	if l, ok := link.Load(ctx, outgoing); ok && l != nil && l.Attrs() != nil {
		// sdk-vpp kept the veth end from before it was renamed: its index and MAC hold, not its name.
		return &Link{Netns: netnsURL, Name: mechanism.GetInterfaceName(), Index: l.Attrs().Index, MAC: l.Attrs().HardwareAddr.String()}
	}
	handle, err := kernellink.GetNetlinkHandle(mechanism.GetNetNSURL())
	if err != nil {
		log.FromContext(ctx).Warnf("journal: %v", err)
		return nil
	}
	defer handle.Close()
	l, err := handle.LinkByName(mechanism.GetInterfaceName())
	if err != nil {
		log.FromContext(ctx).Warnf("journal: the kernel interface %s: %v", mechanism.GetInterfaceName(), err)
		return nil
	}
	return &Link{Netns: netnsURL, Name: l.Attrs().Name, Index: l.Attrs().Index, MAC: l.Attrs().HardwareAddr.String()}
}

// inodeURLOf names the namespace of a file:// URL by its inode, as normalize does.
func inodeURLOf(netnsURL string) string {
	u, err := url.Parse(netnsURL)
	if err != nil || u.Scheme != "file" {
		return netnsURL
	}
	var stat unix.Stat_t
	if unix.Stat(u.Path, &stat) != nil {
		return netnsURL
	}
	return netnsid.Identity{Dev: stat.Dev, Ino: stat.Ino}.InodeURL()
}
