package e2e_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// Scenarios of deployments-k8s v1.18.0's examples/features, examples/multiforwarder and
// examples/use-cases (issue 24, docs/upstream-examples.md), beside upstream_test.go's. Each
// does what the example's README does and ends with the harness's baseline check: nothing left
// in any pod, node namespace or VPP after Close.

// selectForwarderLabel is the label upstream's second forwarder DaemonSet (my-forwarder-vpp)
// registers with, and its network service matches.
const selectForwarderLabel = "my_forwarder_capability"

// features/select-forwarder: a second forwarder on the node registers with
// my_forwarder_capability:true (NSM_LABELS); the service select-forwarder matches that label;
// the endpoint registers for it. Pings both ways; the client's path names the labelled
// forwarder (upstream greps the client's log for it); the default forwarder holds nothing of
// the connection; Close leaves nothing in either forwarder's VPP.
func TestUpstreamFeaturesSelectForwarder(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoForwarders(t, upstreamScenario("fsel", 1, realVPP), true)
	})
}

// multiforwarder + use-cases/Kernel2Kernel: a second forwarder on the node, a service without
// matches, so the nsmgr may hand the connection to either. Upstream's second forwarder is
// forwarder-sriov; here it is a second forwarder of the same kind, each with its own VPP. The
// forwarder that carries the connection holds it whole, the other holds nothing, and Close
// leaves nothing in either.
func TestUpstreamMultiforwarderKernel2Kernel(t *testing.T) {
	onEachVPP(t, func(t *testing.T, realVPP string) {
		runTwoForwarders(t, upstreamScenario("fmfk", 1, realVPP), false)
	})
}

// runTwoForwarders runs a second forwarder beside the node's, labelled as upstream's
// my-forwarder-vpp, an endpoint and a client on the node; with selectByLabel the service
// matches the label, so the labelled forwarder must carry the connection.
func runTwoForwarders(t *testing.T, sc scenario, selectByLabel bool) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	d := startDomain(ctx, t, sc)
	node := d.Nodes[0]
	mine, err := d.AddForwarder(ctx, node, "my-forwarder-vpp-"+node.Name, map[string]string{"p2p": "true", selectForwarderLabel: "true"})
	require.NoError(t, err)

	const serviceName = "select-forwarder"
	netsvc := &registryapi.NetworkService{Name: serviceName, Payload: "ETHERNET"}
	if selectByLabel {
		netsvc.Matches = []*registryapi.Match{{Metadata: &registryapi.Metadata{Labels: map[string]string{selectForwarderLabel: "true"}}}}
	}
	serviceFile := filepath.Join(t.TempDir(), "service.json")
	require.NoError(t, domain.WriteServiceFile(serviceFile, netsvc))
	nse, err := d.StartEndpoint(ctx, node, "nse-kernel", serviceName, "169.254.0.0/16", domain.WithServiceFile(serviceFile))
	require.NoError(t, err)
	client, err := d.Connect(ctx, node, "alpine", "kernel://"+serviceName+"/"+clientIfname)
	require.NoError(t, err)
	require.Len(t, client.Connections, 1)
	conn := client.Connections[0]

	carrier, idle := node, mine
	if forwarderOnPath(conn, mine.ForwarderName) {
		carrier, idle = mine, node
	}
	if selectByLabel {
		require.Equal(t, mine.ForwarderName, carrier.ForwarderName, "the nsmgr did not select the labelled forwarder: path %v", pathNames(conn))
	}
	require.True(t, forwarderOnPath(conn, carrier.ForwarderName), "neither forwarder is on the client's path %v", pathNames(conn))
	require.False(t, forwarderOnPath(conn, idle.ForwarderName), "both forwarders on the client's path %v", pathNames(conn))
	t.Logf("%s carries the connection (path %v)", carrier.ForwarderName, pathNames(conn))

	view := requireConnected(ctx, t, d, sc, client, nse)
	clientAddr, nseAddr := addrOf(t, view.ipContext.GetSrcIpAddrs()[0]), addrOf(t, view.ipContext.GetDstIpAddrs()[0])
	requireUpstreamPing(ctx, t, client.Pod.Netns, clientAddr, nseAddr)
	requireUpstreamPing(ctx, t, nse.Pod.Netns, nseAddr, clientAddr)
	interfaces, err := d.VPPInterfaces(ctx, carrier)
	require.NoError(t, err)
	require.False(t, sameInterfaces(interfaces, carrier.IdleInterfaces), "%s's VPP holds nothing of the connection: %v", carrier.ForwarderName, interfaces)
	requireVPPClean(ctx, t, d, idle)
	if ourDesign(d) {
		requireJournalEmpty(ctx, t, d, idle)
		require.Len(t, inspectJSON(ctx, t, d, carrier).Connections, 1, "%s's journal", carrier.ForwarderName)
	}

	require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
	requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
	requireEventuallyEmpty(t, "endpoint pod", nse.Pod.Netns)
	for _, f := range []*domain.Node{node, mine} {
		requireVPPClean(ctx, t, d, f)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, f)
		}
	}
	requireNodeKernelClean(t, node)
	requireEndpointUnregisters(ctx, t, d, nse)
}

// forwarderOnPath says whether name is a segment of conn's path.
func forwarderOnPath(conn *networkservice.Connection, name string) bool {
	return slices.Contains(pathNames(conn), name)
}

func pathNames(conn *networkservice.Connection) []string {
	var names []string
	for _, s := range conn.GetPath().GetPathSegments() {
		names = append(names, s.GetName())
	}
	return names
}
