package vethpair

import (
	"context"
	"crypto/rand"
	"net"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	kernellink "github.com/networkservicemesh/sdk-kernel/pkg/kernel"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/nshandle"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/peer"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ethtool"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/link"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/mechutils"
	"github.com/networkservicemesh/sdk/pkg/tools/nanoid"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// create makes the pair for one side of conn, the connection id of the journal: the pod's end
// (link) in the mechanism's namespace under the mechanism's interface name, the forwarder's end
// (peer) here, as sdk-vpp's kernelvethpair does. Before the pair exists, both ends' names and
// MACs are in the journal's intent.
func create(ctx context.Context, j *journal.Journal, id string, conn *networkservice.Connection, isClient bool) error {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	if mechanism == nil {
		return nil
	}
	if _, ok := link.Load(ctx, isClient); ok {
		return nil
	}
	handle, err := kernellink.GetNetlinkHandle(mechanism.GetNetNSURL())
	if err != nil {
		return err
	}
	defer handle.Close()

	linkAlias := mechutils.ToAlias(conn, isClient)
	// A pair of an earlier attempt of this connection in the pod is replaced, as sdk-vpp does.
	if previous, aliasErr := handle.LinkByAlias(linkAlias); aliasErr == nil {
		if err = handle.LinkDel(previous); err != nil {
			return errors.Wrapf(err, "deleting the previous link %s", previous.Attrs().Name)
		}
	}

	veth, err := newVeth(conn.GetNetworkService())
	if err != nil {
		return err
	}
	if err = j.NoteCreating(id, journal.Interface{
		Outgoing: isClient,
		Tag:      conn.GetId(),
		Peer:     &journal.Link{Name: veth.PeerName, MAC: veth.PeerHardwareAddr.String()},
	}); err != nil {
		return errors.Wrapf(err, "recording the veth pair %s/%s", veth.Name, veth.PeerName)
	}
	if err = netlink.LinkAdd(veth); err != nil {
		return errors.Wrapf(err, "adding the veth pair %s/%s", veth.Name, veth.PeerName)
	}
	forwarderEnd, err := finish(ctx, handle, veth, mechanism, linkAlias, isClient)
	if err != nil {
		// The pair goes with its forwarder end, wherever the pod's end is by now.
		if forwarderEnd, lookupErr := netlink.LinkByName(veth.PeerName); lookupErr == nil {
			_ = netlink.LinkDel(forwarderEnd)
		}
		link.Delete(ctx, isClient)
		return err
	}
	peer.Store(ctx, isClient, forwarderEnd)
	return nil
}

// finish readies a pair that was just added: the pod's end moved, named and up (kept as the
// side's link), the forwarder's end with its alias and up, which it returns.
func finish(ctx context.Context, handle *netlink.Handle, veth *netlink.Veth, mechanism *kernel.Mechanism, linkAlias string, isClient bool) (netlink.Link, error) {
	if err := ethtool.DisableVethChkSumOffload(veth); err != nil {
		return nil, err
	}
	podEnd, err := moveIntoPod(handle, veth, mechanism, linkAlias)
	if err != nil {
		return nil, err
	}
	link.Store(ctx, isClient, podEnd)
	forwarderEnd, err := netlink.LinkByName(veth.PeerName)
	if err != nil {
		return nil, errors.Wrapf(err, "looking up the forwarder's end %s", veth.PeerName)
	}
	if err = netlink.LinkSetAlias(forwarderEnd, "veth-"+linkAlias); err != nil {
		return nil, errors.Wrapf(err, "setting the alias of %s", veth.PeerName)
	}
	if err = netlink.LinkSetUp(forwarderEnd); err != nil {
		return nil, errors.Wrapf(err, "setting %s up", veth.PeerName)
	}
	return forwarderEnd, nil
}

// newVeth is a pair with names as sdk-vpp gives them and random locally administered MACs: what
// the journal records before the pair exists.
func newVeth(networkService string) (*netlink.Veth, error) {
	name, err := nanoid.GenerateLinuxInterfaceName(networkService)
	if err != nil {
		return nil, err
	}
	peerName, err := nanoid.GenerateLinuxInterfaceName(networkService)
	if err != nil {
		return nil, err
	}
	mac, err := randomMAC()
	if err != nil {
		return nil, err
	}
	peerMAC, err := randomMAC()
	if err != nil {
		return nil, err
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.HardwareAddr = name, mac
	return &netlink.Veth{LinkAttrs: attrs, PeerName: peerName, PeerHardwareAddr: peerMAC}, nil
}

// randomMAC is a random unicast address with the locally administered bit set, as the kernel
// picks for a veth.
func randomMAC() (net.HardwareAddr, error) {
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		return nil, err
	}
	mac[0] = mac[0]&^0x01 | 0x02
	return mac, nil
}

// moveIntoPod moves the pair's pod end into the mechanism's namespace, names it as the mechanism
// asks, sets its alias and brings it up.
func moveIntoPod(handle *netlink.Handle, veth *netlink.Veth, mechanism *kernel.Mechanism, alias string) (netlink.Link, error) {
	ns, err := nshandle.FromURL(mechanism.GetNetNSURL())
	if err != nil {
		return nil, err
	}
	defer func() { _ = ns.Close() }()
	if err = netlink.LinkSetNsFd(veth, int(ns)); err != nil {
		return nil, errors.Wrapf(err, "moving %s into the pod's namespace", veth.Name)
	}
	podEnd, err := handle.LinkByName(veth.Name)
	if err != nil {
		return nil, errors.Wrapf(err, "looking up %s in the pod's namespace", veth.Name)
	}
	if err = handle.LinkSetName(podEnd, mechanism.GetInterfaceName()); err != nil {
		return nil, errors.Wrapf(err, "renaming %s to %s", veth.Name, mechanism.GetInterfaceName())
	}
	if err = handle.LinkSetAlias(podEnd, alias); err != nil {
		return nil, errors.Wrapf(err, "setting the alias of %s", mechanism.GetInterfaceName())
	}
	if err = handle.LinkSetUp(podEnd); err != nil {
		return nil, errors.Wrapf(err, "setting %s up", mechanism.GetInterfaceName())
	}
	// Looked up again: the kernel's view after the rename and alias, as sdk-vpp keeps it.
	return handle.LinkByName(mechanism.GetInterfaceName())
}

// del removes the pair by its forwarder end, which takes the pod's end with it.
func del(ctx context.Context, isClient bool) error {
	defer link.Delete(ctx, isClient)
	forwarderEnd, ok := peer.LoadAndDelete(ctx, isClient)
	if !ok {
		return nil
	}
	return netlink.LinkDel(forwarderEnd)
}
