package topology

import (
	"fmt"
	"net/netip"
)

// AddUplink plugs another veth of node's into the fabric bridge, named ifname in the node's
// namespace, with the fabric's next free address: the host-network uplink of a second forwarder
// DaemonSet's own VPP, which needs a tunnel IP of its own once several nodes run one (a VPP
// sharing the node's uplink would answer for the node's tunnel IP too). It returns that uplink
// as a Node: the node's name and namespace with the new address as IP, and the new bridge port
// as FabricPort.
//
// Both uplinks sit in one subnet, so the node's namespace answers ARP only on the link that
// carries the asked address (arp_ignore=1, arp_announce=2): otherwise the kernel answers for
// the new address on the first uplink too, and frames for the second VPP reach the first.
// The new link's subnet route gets a worse metric, so the node's own traffic keeps leaving
// through its first uplink. Topology.Close deletes it with the node.
func (t *Topology) AddUplink(node *Node, ifname string) (*Node, error) {
	addr := t.nextAddr()
	uplink := &Node{
		Name:       node.Name,
		Netns:      node.Netns,
		IP:         netip.PrefixFrom(addr, fabricSubnet.Bits()),
		fabricPort: node.Name + "-" + ifname,
	}
	if len(uplink.fabricPort) > 15 {
		return nil, fmt.Errorf("fabric port name %q is longer than a link name may be", uplink.fabricPort)
	}
	steps := [][]string{
		{"-n", t.fabric, "link", "add", uplink.fabricPort, "type", "veth", "peer", "name", ifname, "netns", node.Netns},
		{"-n", t.fabric, "link", "set", uplink.fabricPort, "master", bridgeName, "up"},
		{"-n", node.Netns, "addr", "add", uplink.IP.String(), "dev", ifname, "noprefixroute"},
		{"-n", node.Netns, "link", "set", ifname, "up"},
		{"-n", node.Netns, "route", "add", uplink.IP.Masked().String(), "dev", ifname, "src", addr.String(), "metric", "100"},
	}
	for _, step := range steps {
		if err := ip(step...); err != nil {
			return nil, err
		}
	}
	for _, setting := range []string{"net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2"} {
		if err := ip("netns", "exec", node.Netns, "sysctl", "-qw", setting); err != nil {
			return nil, err
		}
	}
	t.extraUplinks++
	return uplink, nil
}

// nextAddr is the fabric address after the nodes' and the added uplinks'.
func (t *Topology) nextAddr() netip.Addr {
	addr := fabricSubnet.Addr()
	for i := 0; i <= len(t.Nodes)+t.extraUplinks; i++ {
		addr = addr.Next()
	}
	return addr
}
