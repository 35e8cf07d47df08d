package topology

import "fmt"

// Trunk stands in for a second NIC of every node, wired to a switch outside the cluster, as the
// second docker network of NSM's remote vlan example: a veth named Device in every node namespace,
// all plugged into one bridge (TrunkBridge, in the fabric namespace) that also holds a host
// outside the cluster (HostNetns), whose interface on the trunk is HostIfname. Frames cross it
// tagged; the bridge passes every VLAN.
type Trunk struct {
	Device     string
	HostNetns  string
	HostIfname string
	topology   *Topology
}

const (
	// TrunkBridge is the trunk's switch in FabricNetns.
	TrunkBridge = "trunk0"
	// trunkHostPort is the host's port on TrunkBridge.
	trunkHostPort = "ext-trunk"
)

// TrunkPort is node's port on TrunkBridge: every frame between node's Device and the trunk
// crosses it.
func TrunkPort(node *Node) string { return node.Name + "-trunk" }

// AddTrunk creates the trunk: device in every node namespace (up, no address, as a NIC the
// forwarder's vlan mechanism is given), the bridge, and the outside host with its interface up.
// Topology.Close deletes it with everything else.
func (t *Topology) AddTrunk(device string) (*Trunk, error) {
	if t.trunk != nil {
		return nil, fmt.Errorf("the topology has a trunk already (%s)", t.trunk.Device)
	}
	tr := &Trunk{Device: device, HostNetns: t.prefix + "ext", HostIfname: "eth0", topology: t}
	if err := addNamespace(tr.HostNetns); err != nil {
		return nil, err
	}
	t.trunk = tr
	steps := [][]string{
		{"-n", t.fabric, "link", "add", TrunkBridge, "type", "bridge"},
		{"-n", t.fabric, "link", "set", TrunkBridge, "up"},
		{"-n", t.fabric, "link", "add", trunkHostPort, "type", "veth", "peer", "name", tr.HostIfname, "netns", tr.HostNetns},
		{"-n", t.fabric, "link", "set", trunkHostPort, "master", TrunkBridge, "up"},
		{"-n", tr.HostNetns, "link", "set", tr.HostIfname, "up"},
	}
	for _, node := range t.Nodes {
		port := TrunkPort(node)
		steps = append(steps,
			[]string{"-n", t.fabric, "link", "add", port, "type", "veth", "peer", "name", device, "netns", node.Netns},
			[]string{"-n", t.fabric, "link", "set", port, "master", TrunkBridge, "up"},
			[]string{"-n", node.Netns, "link", "set", device, "up"},
		)
	}
	for _, step := range steps {
		if err := ip(step...); err != nil {
			return nil, err
		}
	}
	return tr, nil
}
