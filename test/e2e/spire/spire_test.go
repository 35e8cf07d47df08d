package spire_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/workloadapi"
	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/spire"
)

// The test binary registers itself as a workload on two nodes and must get
// its SVID from each node's agent: join-token attestation, the unix path
// selector and the workload API all real.
func TestWorkloadGetsItsOwnSVIDFromEachNodeAgent(t *testing.T) {
	binDir, err := filepath.Abs("../../../.cache/bin")
	require.NoError(t, err)
	if _, statErr := os.Stat(filepath.Join(binDir, "spire-server")); statErr != nil {
		t.Skip("SPIRE is not installed: run scripts/install-tools.sh")
	}
	self, err := os.Executable()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := spire.Start(ctx, spire.Options{
		BinDir:    binDir,
		Dir:       t.TempDir(),
		Nodes:     []string{"node1", "node2"},
		Workloads: []spire.Workload{{Name: "self", Binary: self}},
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)

	for _, node := range []string{"node1", "node2"} {
		// Like the harness programs, wait for the agent to mint the SVID
		// after its first sync.
		fetchCtx, cancelFetch := context.WithTimeout(ctx, 30*time.Second)
		source, sourceErr := workloadapi.NewX509Source(fetchCtx,
			workloadapi.WithClientOptions(workloadapi.WithAddr(s.SocketURL(node))))
		cancelFetch()
		require.NoError(t, sourceErr, "no SVID from %s's agent", node)
		svid, fetchErr := source.GetX509SVID()
		require.NoError(t, fetchErr)
		require.NoError(t, source.Close())
		require.Equal(t, s.ID("self"), svid.ID.String())
		require.True(t, svid.Certificates[0].NotAfter.After(time.Now().Add(30*time.Minute)))
	}
}

// The restarts NSM's heal examples do (spire-server-restart, spire-agent-restart,
// spire-server-agent-restart, spire-upgrade): after each, a workload fetches its SVID again from
// its node's agent; a server restart keeps the CA, a reinstall brings a new one.
func TestWorkloadGetsItsSVIDAfterEachSPIRERestart(t *testing.T) {
	binDir, err := filepath.Abs("../../../.cache/bin")
	require.NoError(t, err)
	if _, statErr := os.Stat(filepath.Join(binDir, "spire-server")); statErr != nil {
		t.Skip("SPIRE is not installed: run scripts/install-tools.sh")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := spire.Start(ctx, spire.Options{
		BinDir:    binDir,
		Dir:       t.TempDir(),
		Nodes:     []string{"node1"},
		Workloads: []spire.Workload{{Name: "self", Binary: self}},
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)

	root := func() []byte {
		t.Helper()
		fetchCtx, cancelFetch := context.WithTimeout(ctx, 60*time.Second)
		defer cancelFetch()
		source, sourceErr := workloadapi.NewX509Source(fetchCtx,
			workloadapi.WithClientOptions(workloadapi.WithAddr(s.SocketURL("node1"))))
		require.NoError(t, sourceErr, "no SVID from the agent")
		defer func() { require.NoError(t, source.Close()) }()
		svid, fetchErr := source.GetX509SVID()
		require.NoError(t, fetchErr)
		require.Equal(t, s.ID("self"), svid.ID.String())
		bundle, bundleErr := source.GetX509BundleForTrustDomain(svid.ID.TrustDomain())
		require.NoError(t, bundleErr)
		authorities := bundle.X509Authorities()
		require.NotEmpty(t, authorities)
		return authorities[len(authorities)-1].Raw
	}
	first := root()
	require.NoError(t, s.RestartServer(ctx))
	require.Equal(t, first, root(), "the restarted server changed its CA")
	require.NoError(t, s.RestartAgents(ctx))
	require.Equal(t, first, root(), "new agents changed the CA")
	require.NoError(t, s.RestartServer(ctx))
	require.NoError(t, s.RestartAgents(ctx))
	require.Equal(t, first, root())
	require.NoError(t, s.Reinstall(ctx))
	require.NotEqual(t, first, root(), "a reinstalled SPIRE kept the old CA")
}
