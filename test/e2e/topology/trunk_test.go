package topology_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The trunk gives every node the device, up and without an address, joins them and the outside
// host on one bridge (frames from one node reach the other), and goes with Close.
func TestTrunkJoinsNodesAndHostAndCloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	prefix := topology.RunPrefix("e2e") + "trunk-"
	topo, err := topology.New(prefix, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })

	trunk, err := topo.AddTrunk("ext_net1")
	require.NoError(t, err)
	for _, node := range topo.Nodes {
		state, inspectErr := topology.Inspect(node.Netns)
		require.NoError(t, inspectErr)
		device, ok := state.Link("ext_net1")
		require.True(t, ok, "%s has no trunk device:\n%s", node.Name, state)
		require.True(t, device.Up)
		require.Empty(t, device.Addrs, "the trunk device is a NIC handed to VPP, without an address")
	}
	// Frames cross the trunk bridge: an address on node2's device and one on the host's interface
	// for the check (Close removes them with the namespaces).
	require.NoError(t, exec.Command("ip", "-n", topo.Nodes[1].Netns, "addr", "add", "192.0.2.1/24", "dev", "ext_net1").Run())
	require.NoError(t, exec.Command("ip", "-n", trunk.HostNetns, "addr", "add", "192.0.2.2/24", "dev", trunk.HostIfname).Run())
	out, err := exec.Command("ip", "netns", "exec", trunk.HostNetns, "ping", "-c", "1", "-W", "2", "192.0.2.1").CombinedOutput()
	require.NoError(t, err, "the host cannot reach node2 over the trunk:\n%s", out)

	require.NoError(t, topo.Close())
	names, err := topology.Namespaces(prefix)
	require.NoError(t, err)
	require.Empty(t, names)
}
