package topology

// FabricNetns is the namespace of the bridge between the nodes: every packet from one node to
// another crosses it, so a capture there sees the inter-node link.
func (t *Topology) FabricNetns() string { return t.fabric }

// FabricPort is node's port on the bridge in FabricNetns that joins the nodes' uplinks. A capture there sees every frame the
// node sends or receives over the fabric; one on the bridge device sees only what the bridge
// floods or delivers to itself, which after the bridge has learnt the nodes' MACs is none of
// their unicast traffic.
func (n *Node) FabricPort() string {
	if n.fabricPort != "" {
		return n.fabricPort
	}
	return n.Name
}
