package e2e_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// multiforwarder + use-cases/Kernel2Ethernet2Kernel: two forwarders on each of two nodes (the
// added one with its own VPP, uplink and tunnel IP, as a second DaemonSet), the client on node
// 1, the endpoint on node 2, a service without matches, so each nsmgr may hand the connection
// to either of its forwarders. Pings both ways; exactly one forwarder per node is on the path,
// its VPP holds the VXLAN tunnel, the other's VPP and journal hold nothing; Close leaves
// nothing. Then, as features/select-forwarder across the nodes, a service matching only the
// added forwarders' label: the same checks with both added forwarders on the path, so the
// connection surely crosses their own uplinks, whichever forwarders the first connection took.
func TestUpstreamMultiforwarderKernel2Ethernet2Kernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		skipUnlessFeaturesSlow(t)
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fmfe", 2, realVPP), "upstream multiforwarder + Kernel2Ethernet2Kernel")
		ctx, d, rep := startScenario(t, sc, 2*shortScenarioTime)
		var forwarders [][2]*domain.Node
		for _, node := range d.Nodes {
			mine, err := d.AddForwarder(ctx, node, "my-forwarder-vpp-"+node.Name, map[string]string{"p2p": "true", selectForwarderLabel: "true"})
			require.NoError(t, err)
			require.NotEqual(t, node.IP, mine.IP, "%s's added forwarder shares the node's tunnel IP", node.Name)
			forwarders = append(forwarders, [2]*domain.Node{node, mine})
		}

		rep.step("connected as upstream: one forwarder per node carries it, pings both ways")
		runAcrossTwoForwarders(ctx, t, d, sc, forwarders, "multiforwarder", "", nil)

		rep.step("connected through the added forwarders (their own uplinks), pings both ways")
		added := []*domain.Node{forwarders[0][1], forwarders[1][1]}
		runAcrossTwoForwarders(ctx, t, d, sc, forwarders, "select-forwarder", "-sel", added)
	})
}

// runAcrossTwoForwarders registers serviceName, starts its endpoint on sc's endpoint node and
// connects a client on sc's client node (their pod names end in podSuffix: a closed client's
// pod stays); with want set the service matches the added
// forwarders' label and want[i] must carry the connection on node i. It requires exactly one
// forwarder per node on the path, pings both ways, the carriers' VPPs holding a VXLAN tunnel and
// the others' VPP and journal empty, and Close to leave nothing in any pod, VPP, journal or node.
func runAcrossTwoForwarders(ctx context.Context, t *testing.T, d *domain.Domain, sc scenario, forwarders [][2]*domain.Node, serviceName, podSuffix string, want []*domain.Node) {
	t.Helper()
	netsvc := &registryapi.NetworkService{Name: serviceName, Payload: "ETHERNET"}
	if want != nil {
		netsvc.Matches = []*registryapi.Match{{Metadata: &registryapi.Metadata{Labels: map[string]string{selectForwarderLabel: "true"}}}}
	}
	serviceFile := filepath.Join(t.TempDir(), "service.json")
	require.NoError(t, domain.WriteServiceFile(serviceFile, netsvc))
	nse, err := d.StartEndpoint(ctx, d.Nodes[sc.endpointNode], "nse-kernel"+podSuffix, serviceName, "169.254.0.0/16", domain.WithServiceFile(serviceFile))
	require.NoError(t, err)
	client, err := d.Connect(ctx, d.Nodes[sc.clientNode], "alpine"+podSuffix, "kernel://"+serviceName+"/"+clientIfname)
	require.NoError(t, err)
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]

	var carriers, idle []*domain.Node
	for i, pair := range forwarders {
		onPath := 0
		for _, f := range pair {
			if forwarderOnPath(conn, f.ForwarderName) {
				onPath++
				carriers = append(carriers, f)
			} else {
				idle = append(idle, f)
			}
		}
		require.Equal(t, 1, onPath, "%s: %d of its forwarders on the client's path %v", d.Nodes[i].Name, onPath, pathNames(conn))
		if want != nil {
			require.Equal(t, want[i].ForwarderName, carriers[i].ForwarderName, "%s's nsmgr did not select the labelled forwarder: path %v", d.Nodes[i].Name, pathNames(conn))
		}
	}
	t.Logf("%s and %s carry the connection (path %v)", carriers[0].ForwarderName, carriers[1].ForwarderName, pathNames(conn))

	// requireConnected's VXLAN check looks at the nodes' first forwarders; the carriers' VPPs
	// are checked below instead.
	connected := sc
	connected.overVxlan = false
	view := requireConnected(ctx, t, d, connected, client, nse)
	clientAddr, nseAddr := addrOf(t, view.ipContext.GetSrcIpAddrs()[0]), addrOf(t, view.ipContext.GetDstIpAddrs()[0])
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
	for _, f := range carriers {
		requireVPPHolds(ctx, t, d, f, "vxlan")
		if ourDesign(d) {
			require.Len(t, inspectJSON(ctx, t, d, f).Connections, 1, "%s's journal", f.ForwarderName)
		}
	}
	for _, f := range idle {
		requireVPPClean(ctx, t, d, f)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, f)
		}
	}

	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, pair := range forwarders {
		for _, f := range pair {
			requireVPPClean(ctx, t, d, f)
			if ourDesign(d) {
				requireJournalEmpty(ctx, t, d, f)
			}
		}
		requireNodeKernelClean(t, pair[0])
	}
	requireEndpointUnregisters(ctx, t, d, nse)
}
