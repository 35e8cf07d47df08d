package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ingressHandle is the ingress qdisc's handle, ffff:.
var ingressHandle = netlink.MakeHandle(0xffff, 0)

// crossConnect redirects every frame that comes in on a to b's egress and back, when both exist.
func crossConnect(a, b string) error {
	linkA, err := netlink.LinkByName(a)
	if err != nil {
		return err
	}
	linkB, err := netlink.LinkByName(b)
	if err != nil {
		return err
	}
	return errors.Join(redirect(linkA, linkB), redirect(linkB, linkA))
}

// redirect makes from's ingress a u32 match-all filter that redirects to to's egress, replacing
// a filter that redirects elsewhere (to's earlier ifindex).
func redirect(from, to netlink.Link) error {
	qdiscs, err := netlink.QdiscList(from)
	if err != nil {
		return err
	}
	hasIngress := false
	for _, q := range qdiscs {
		if q.Type() == "ingress" {
			hasIngress = true
		}
	}
	if !hasIngress {
		ingress := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: from.Attrs().Index, Handle: ingressHandle, Parent: netlink.HANDLE_INGRESS}}
		if err = netlink.QdiscAdd(ingress); err != nil {
			return fmt.Errorf("ingress qdisc on %s: %w", from.Attrs().Name, err)
		}
	}
	filters, err := netlink.FilterList(from, ingressHandle)
	if err != nil {
		return err
	}
	for _, f := range filters {
		if u32, ok := f.(*netlink.U32); ok {
			for _, action := range u32.Actions {
				if mirred, ok := action.(*netlink.MirredAction); ok && mirred.Ifindex == to.Attrs().Index {
					return nil
				}
			}
		}
	}
	for _, f := range filters {
		_ = netlink.FilterDel(f)
	}
	filter := &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: from.Attrs().Index, Parent: ingressHandle, Priority: 1, Protocol: unix.ETH_P_ALL},
		Actions:     []netlink.Action{netlink.NewMirredAction(to.Attrs().Index)},
	}
	if err = netlink.FilterAdd(filter); err != nil {
		return fmt.Errorf("redirect %s to %s: %w", from.Attrs().Name, to.Attrs().Name, err)
	}
	return nil
}

// passThroughPod makes the pod's own stack silent on its NSM interfaces, which carry the
// chain's addresses: no ARP reply and no echo reply, so only the final endpoint answers.
func passThroughPod() error {
	for path, value := range map[string]string{
		"/proc/sys/net/ipv4/conf/all/arp_ignore":     "8",
		"/proc/sys/net/ipv4/conf/default/arp_ignore": "8",
		"/proc/sys/net/ipv4/icmp_echo_ignore_all":    "1",
	} {
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return err
		}
	}
	return nil
}
