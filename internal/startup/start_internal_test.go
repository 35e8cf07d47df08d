package startup

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"

	"github.com/nsmfwd/forwarder-vpp/internal/registry/registration/registrationtest"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/grpctransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// netnsPrefix starts the name of every namespace these tests create.
const netnsPrefix = "fcs"

// forwarderEnv sets the environment of a forwarder registering at registrySocket, with an
// in-memory SPIFFE identity of domain and the VPP API socket vppSocket.
func forwarderEnv(t *testing.T, domain *svidtest.TrustDomain, registrySocket, vppSocket string) (cfg *config.Config, listenSocket string) {
	dir := t.TempDir()
	t.Setenv(svid.EndpointSocketEnv, svidtest.ServeWorkloadAPI(t, domain.Issue("/forwarder")))
	policy := filepath.Join(dir, "allow.rego")
	require.NoError(t, os.WriteFile(policy, []byte("package nsm\n\ndefault valid = true\n"), 0o600))
	listenSocket = filepath.Join(dir, "forwarder.sock")
	for variable, value := range map[string]string{
		"NSM_NAME":                     "forwarder-test",
		"NSM_CONNECT_TO":               "unix://" + registrySocket,
		"NSM_LISTEN_ON":                "unix://" + listenSocket,
		"NSM_REGISTRY_CLIENT_POLICIES": policy,
		"NSM_TUNNEL_IP":                "127.0.0.1",
		"NSM_DIAL_TIMEOUT":             "2s",
		"NSM_VPP_API_SOCKET":           vppSocket,
		"NSM_STATE_DIR":                filepath.Join(dir, "state"),
	} {
		t.Setenv(variable, value)
	}
	cfg, err := config.Load()
	require.NoError(t, err)
	return cfg, listenSocket
}

// startIn runs start on a thread inside node, the forwarder pod's namespace: what the restore scan
// finds in the kernel is the test's, never the test host's.
func startIn(ctx context.Context, node *vppsimtest.Netns, abort context.CancelCauseFunc, cfg *config.Config, phases *lifecycle.Lifecycle, connect VPPConnector) error {
	return node.Do(func() error { return Start(ctx, abort, cfg, phases, connect) })
}

// serveRegistry runs a registry of domain on a temporary unix socket until the test ends.
func serveRegistry(t *testing.T, domain *svidtest.TrustDomain) (*registrationtest.Recorder, string) {
	registrySocket := filepath.Join(t.TempDir(), "registry.sock")
	registryListener, err := net.Listen("unix", registrySocket)
	require.NoError(t, err)
	registry := new(registrationtest.Recorder)
	registryServer := grpc.NewServer(grpctransport.ServerOptions(domain.Issue("/nsmgr"), grpctransport.DefaultKeepalive)...)
	registryapi.RegisterNetworkServiceEndpointRegistryServer(registryServer, registry)
	go func() { _ = registryServer.Serve(registryListener) }()
	t.Cleanup(registryServer.Stop)
	return registry, registrySocket
}

// simForwarder is a forwarder's node on the simulator: a namespace holding a VPP simulator, a
// registry of the trust domain, and the forwarder's configuration for both (read from the
// environment: set variables of a test's own first).
type simForwarder struct {
	node         *vppsimtest.Netns
	sim          *vppsim.Sim
	registry     *registrationtest.Recorder
	cfg          *config.Config
	listenSocket string
}

func newSimForwarder(t *testing.T, domain *svidtest.TrustDomain, prefix string) *simForwarder {
	t.Helper()
	f := &simForwarder{node: vppsimtest.NewNetns(t, prefix)}
	var registrySocket string
	f.registry, registrySocket = serveRegistry(t, domain)
	f.sim = vppsimtest.StartSim(t, f.node.Name)
	f.cfg, f.listenSocket = forwarderEnv(t, domain, registrySocket, f.sim.APISocket())
	return f
}

// stopWithin runs phases.Stop as on SIGTERM and fails the test if it takes longer than bound.
func stopWithin(t *testing.T, ctx context.Context, phases *lifecycle.Lifecycle, bound time.Duration) {
	t.Helper()
	stopped := make(chan struct{})
	go func() { phases.Stop(ctx); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(bound):
		t.Fatal("shutdown did not finish")
	}
}

// TestStartServesRegistersAndShutsDownInOrder runs every start-up phase in-process against a VPP
// simulator speaking VPP's API protocol on its socket, a fake workload API and a fake registry,
// then stops as on SIGTERM.
func TestStartServesRegistersAndShutsDownInOrder(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	f := newSimForwarder(t, domain, netnsPrefix)
	registry, sim, listenSocket := f.registry, f.sim, f.listenSocket

	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	var phases lifecycle.Lifecycle
	require.NoError(t, startIn(ctx, f.node, abort, f.cfg, &phases, ConnectVPP))
	require.Len(t, sim.Snapshot().Clients, 1, "the forwarder holds one API connection to VPP")
	require.NotEmpty(t, vppsim.RequestsOf[*interfaces.SwInterfaceDump](sim), "the restore scan asked VPP for its interfaces")
	require.Empty(t, vppsim.RequestsOf[*af_packet.AfPacketCreateV3](sim), "an external VPP keeps its uplink")

	// The registry client may repeat a Register (a refresh, or a retry after a transport error):
	// registering is idempotent, so every call must describe this forwarder.
	registered, _ := registry.Snapshot()
	require.NotEmpty(t, registered)
	for _, nse := range registered {
		require.Equal(t, "forwarder-test", nse.GetName())
		require.Equal(t, []string{"forwarder"}, nse.GetNetworkServiceNames())
	}

	// A peer of the trust domain reaches the forwarder's NSM API over mTLS.
	peer := domain.Issue("/nsmgr")
	peerOptions := grpctransport.DialOptions(peer, grpctransport.TokenGenerator(peer, time.Minute), grpctransport.DefaultKeepalive)
	conn, err := grpc.NewClient("unix://"+listenSocket, peerOptions...)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	monitorCtx, cancelMonitor := context.WithTimeout(ctx, 5*time.Second)
	defer cancelMonitor()
	monitor, err := networkservice.NewMonitorConnectionClient(conn).MonitorConnections(monitorCtx, &networkservice.MonitorScopeSelector{})
	require.NoError(t, err)
	event, err := monitor.Recv()
	require.NoError(t, err)
	require.Equal(t, networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER, event.GetType())

	// A stranger is refused by mTLS.
	stranger := svidtest.NewTrustDomain(t, "other.nsm").Issue("/nsc")
	strangerOptions := grpctransport.DialOptions(stranger, grpctransport.TokenGenerator(stranger, time.Minute), grpctransport.DefaultKeepalive)
	strangerConn, err := grpc.NewClient("unix://"+listenSocket, strangerOptions...)
	require.NoError(t, err)
	defer func() { _ = strangerConn.Close() }()
	strangerCtx, cancelStranger := context.WithTimeout(ctx, time.Second)
	defer cancelStranger()
	_, err = networkservice.NewMonitorConnectionClient(strangerConn).MonitorConnections(strangerCtx, &networkservice.MonitorScopeSelector{})
	if err == nil {
		_, err = monitor.Recv()
	}
	require.Error(t, err)

	// SIGTERM: unregister, stop serving (the open monitor stream is cut), clean up, release VPP.
	abort(context.Canceled)
	stopWithin(t, ctx, &phases, 15*time.Second)
	_, unregistered := registry.Snapshot()
	require.Equal(t, []string{"forwarder-test"}, unregistered)
	_, err = monitor.Recv()
	require.Error(t, err, "live streams are closed on shutdown")
	_, err = net.DialTimeout("unix", listenSocket, time.Second)
	require.True(t, err != nil || errors.Is(err, net.ErrClosed), "nothing accepts on the listen socket any more")
	require.Eventually(t, func() bool { return len(sim.Snapshot().Clients) == 0 }, 5*time.Second, 20*time.Millisecond,
		"the VPP API connection is released")
}

// nsmgr may never come up; SIGTERM must still end start-up promptly.
func TestSigtermWhileWaitingForTheRegistry(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	node := vppsimtest.NewNetns(t, netnsPrefix)
	sim := vppsimtest.StartSim(t, node.Name)
	cfg, _ := forwarderEnv(t, domain, filepath.Join(t.TempDir(), "nsmgr-not-yet.sock"), sim.APISocket())

	ctx, abort := context.WithCancelCause(context.Background())
	var phases lifecycle.Lifecycle
	returned := make(chan error, 1)
	go func() { returned <- startIn(ctx, node, abort, cfg, &phases, ConnectVPP) }()
	select {
	case err := <-returned:
		t.Fatalf("start returned without a registry: %v", err)
	case <-time.After(2 * time.Second):
	}
	abort(context.Canceled)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("start did not return after SIGTERM")
	}
	phases.Stop(ctx)
}

func TestShutdownFitsKubernetesDefaultGracePeriod(t *testing.T) {
	total := unregisterBound + serverStopBound + cleanupBound + identityCloseBound + vppReleaseBound + telemetryBound
	require.Less(t, total, 30*time.Second)
}
