package topology

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
)

// Node is a namespace that hosts one node's simulator, forwarder and nsmgr.
type Node struct {
	Name  string
	Netns string
	// IP is the node's address on the fabric and its tunnel IP.
	IP netip.Prefix
	// fabricPort names the bridge port of an added uplink (AddUplink); empty for the node's own.
	fabricPort string
}

// Pod is a workload namespace on a node.
type Pod struct {
	Name  string
	Netns string
	Node  *Node
	// sandbox is the pod's pause process (AddPodWithSandbox), or nil.
	sandbox *exec.Cmd
}

// Topology is one run's set of namespaces.
type Topology struct {
	prefix string
	fabric string
	Nodes  []*Node
	pods   []*Pod
	// trunk is the stand-in for the nodes' second NIC (AddTrunk), or nil.
	trunk *Trunk
	// extraUplinks counts AddUplink's uplinks, which take fabric addresses after the nodes'.
	extraUplinks int
}

const (
	bridgeName = "br0"
	// uplinkName is each node's interface on the fabric.
	uplinkName = "eth0"
)

// fabricSubnet holds the node addresses; it exists only inside this run's
// namespaces.
var fabricSubnet = netip.MustParsePrefix("172.31.250.0/24")

// New creates the fabric and n nodes, each reachable from every other. On
// error whatever was created is deleted again.
func New(prefix string, n int) (t *Topology, err error) {
	t = &Topology{prefix: prefix, fabric: prefix + "fab"}
	defer func() {
		if err != nil {
			_ = t.Close()
			t = nil
		}
	}()
	if err = addNamespace(t.fabric); err != nil {
		return t, err
	}
	if err = ip("-n", t.fabric, "link", "add", bridgeName, "type", "bridge"); err != nil {
		return t, err
	}
	if err = ip("-n", t.fabric, "link", "set", bridgeName, "up"); err != nil {
		return t, err
	}
	addr := fabricSubnet.Addr()
	for i := 1; i <= n; i++ {
		addr = addr.Next()
		node := &Node{
			Name:  fmt.Sprintf("node%d", i),
			Netns: fmt.Sprintf("%sn%d", prefix, i),
			IP:    netip.PrefixFrom(addr, fabricSubnet.Bits()),
		}
		t.Nodes = append(t.Nodes, node)
		if err = t.plugNode(node); err != nil {
			return t, err
		}
	}
	return t, nil
}

// plugNode creates the node namespace and its veth uplink into the bridge.
func (t *Topology) plugNode(node *Node) error {
	if err := addNamespace(node.Netns); err != nil {
		return err
	}
	fabricEnd := node.Name
	steps := [][]string{
		{"-n", t.fabric, "link", "add", fabricEnd, "type", "veth", "peer", "name", uplinkName, "netns", node.Netns},
		{"-n", t.fabric, "link", "set", fabricEnd, "master", bridgeName, "up"},
		{"-n", node.Netns, "addr", "add", node.IP.String(), "dev", uplinkName},
		{"-n", node.Netns, "link", "set", uplinkName, "up"},
	}
	for _, step := range steps {
		if err := ip(step...); err != nil {
			return err
		}
	}
	return nil
}

// AddPod creates an empty pod namespace (loopback only) on node.
func (t *Topology) AddPod(node *Node, name string) (*Pod, error) {
	pod := &Pod{Name: name, Netns: fmt.Sprintf("%s%s-%s", t.prefix, node.Name, name), Node: node}
	if err := addNamespace(pod.Netns); err != nil {
		return nil, err
	}
	t.pods = append(t.pods, pod)
	return pod, nil
}

// Pods are the pods created so far.
func (t *Topology) Pods() []*Pod { return t.pods }

// Fabric is the name of the bridge namespace.
func (t *Topology) Fabric() string { return t.fabric }

// DeletePod removes a pod namespace.
func (t *Topology) DeletePod(pod *Pod) error {
	for i, p := range t.pods {
		if p == pod {
			t.pods = append(t.pods[:i], t.pods[i+1:]...)
			break
		}
	}
	pod.stopSandbox()
	return deleteNamespace(pod.Netns)
}

// Close deletes every namespace of the run, pods first.
func (t *Topology) Close() error {
	var errs []error
	for _, pod := range t.pods {
		pod.stopSandbox()
		errs = append(errs, deleteNamespace(pod.Netns))
	}
	t.pods = nil
	if t.trunk != nil {
		errs = append(errs, deleteNamespace(t.trunk.HostNetns))
	}
	for _, node := range t.Nodes {
		errs = append(errs, deleteNamespace(node.Netns))
	}
	errs = append(errs, deleteNamespace(t.fabric))
	names, err := Namespaces(t.prefix)
	errs = append(errs, err)
	if len(names) > 0 {
		errs = append(errs, fmt.Errorf("namespaces still present after close: %v", names))
	}
	return errors.Join(errs...)
}
