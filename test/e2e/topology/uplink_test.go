package topology_test

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// An added uplink has an address of its own that other nodes reach through that link alone: the
// answer to their ARP is its MAC, not the first uplink's, and the node's own traffic keeps to
// its first uplink.
func TestAddedUplinkAnswersOnItsOwnLink(t *testing.T) {
	requireRoot(t)
	prefix := topology.RunPrefix("e2e") + "upl-"
	topo, err := topology.New(prefix, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })
	node1, node2 := topo.Nodes[0], topo.Nodes[1]

	uplink, err := topo.AddUplink(node2, "eth7")
	require.NoError(t, err)
	require.NotEqual(t, node1.IP, uplink.IP)
	require.NotEqual(t, node2.IP, uplink.IP)
	require.Equal(t, node2.Netns, uplink.Netns)
	require.NotEqual(t, node2.FabricPort(), uplink.FabricPort())

	out, err := exec.Command("ip", "netns", "exec", node1.Netns,
		"ping", "-c", "1", "-W", "2", uplink.IP.Addr().String()).CombinedOutput()
	require.NoError(t, err, "node1 cannot reach node2's added uplink:\n%s", out)
	out, err = exec.Command("ip", "-n", node1.Netns, "neigh", "show", uplink.IP.Addr().String()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	added, err := linkMAC(node2.Netns, "eth7")
	require.NoError(t, err)
	first, err := linkMAC(node2.Netns, "eth0")
	require.NoError(t, err)
	require.Contains(t, string(out), added, "node1 learnt another MAC than the added uplink's for its address")
	require.NotContains(t, string(out), first, "node2's first uplink answered for the added uplink's address")

	out, err = exec.Command("ip", "-n", node2.Netns, "route", "get", node1.IP.Addr().String()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "dev eth0", "node2's own traffic left through the added uplink")

	require.NoError(t, topo.Close())
	names, err := topology.Namespaces(prefix)
	require.NoError(t, err)
	require.Empty(t, names)
}

func linkMAC(netnsName, ifname string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", netnsName, "cat", "/sys/class/net/"+ifname+"/address").Output()
	if err != nil {
		return "", err
	}
	mac, err := net.ParseMAC(strings.TrimSpace(string(out)))
	if err != nil {
		return "", err
	}
	return mac.String(), nil
}
