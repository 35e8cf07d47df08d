package topology

// FabricNetns is the namespace of the bridge between the nodes: every packet from one node to
// another crosses it, so a capture there sees the inter-node link.
func (t *Topology) FabricNetns() string { return t.fabric }

// FabricBridge is the bridge in FabricNetns that joins the nodes' uplinks.
const FabricBridge = bridgeName
