package domain

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/spire"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// The control plane alone, without forwarders: an endpoint on node2
// registers through node2's nsmgr, which reaches the registry on node1 over
// the fabric with SPIFFE mTLS; the registry holds it under node2's public
// nsmgr URL; on SIGTERM the endpoint withdraws it.
func TestEndpointRegistersThroughItsNodeAndWithdraws(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	spireBin, err := filepath.Abs("../../../.cache/bin")
	require.NoError(t, err)
	if _, statErr := os.Stat(filepath.Join(spireBin, "spire-agent")); statErr != nil {
		t.Skip("SPIRE is not installed: run scripts/install-tools.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	workDir, err := os.MkdirTemp("", "e2e-")
	require.NoError(t, err)
	binDir := filepath.Join(workDir, "bin")
	require.NoError(t, goBuild(ctx, "../../..", "-o", binDir+"/",
		"./test/e2e/cmd/e2e-registry", "./test/e2e/cmd/e2e-nsmgr", "./test/e2e/cmd/e2e-nse"))
	bins := &Binaries{
		Registry: filepath.Join(binDir, "e2e-registry"),
		Nsmgr:    filepath.Join(binDir, "e2e-nsmgr"),
		Endpoint: filepath.Join(binDir, "e2e-nse"),
	}

	d := &Domain{cfg: Config{Binaries: bins, WorkDir: workDir, LogLevel: "DEBUG"}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s\n%s", workDir, d.Diagnostics())
		}
		require.NoError(t, d.Close())
		if !t.Failed() {
			_ = os.RemoveAll(workDir)
		}
	})
	d.Topology, err = topology.New(topology.RunPrefix("e2e")+"cp-", 2)
	require.NoError(t, err)
	d.SPIRE, err = spire.Start(ctx, spire.Options{
		BinDir: spireBin,
		Dir:    filepath.Join(workDir, "spire"),
		Nodes:  []string{"node1", "node2"},
		Workloads: []spire.Workload{
			{Name: "registry", Binary: bins.Registry},
			{Name: "nsmgr", Binary: bins.Nsmgr},
			{Name: "nse", Binary: bins.Endpoint},
		},
	})
	require.NoError(t, err)
	require.NoError(t, d.startRegistry(ctx))
	for _, tn := range d.Topology.Nodes {
		node := &Node{Node: tn}
		d.Nodes = append(d.Nodes, node)
		dir := filepath.Join(workDir, tn.Name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		node.NsmgrSocket = filepath.Join(dir, "nsmgr.sock")
		require.NoError(t, d.startNsmgr(ctx, node, dir))
	}

	nse, err := d.StartEndpoint(ctx, d.Nodes[1], "nse", "icmp-responder", "172.16.100.0/24")
	require.NoError(t, err)
	records, err := d.Endpoints(ctx)
	require.NoError(t, err)
	require.Equal(t, []EndpointRecord{{Name: "nse", URL: "tcp://" + d.Nodes[1].IP.Addr().String() + ":5001",
		Services: []string{"icmp-responder"}}}, records)

	require.NoError(t, nse.Close())
	records, err = d.Endpoints(ctx)
	require.NoError(t, err)
	require.Empty(t, records)
}
