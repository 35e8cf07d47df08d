package startup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// journalNetnsPrefix starts the namespaces of the journal tests.
const journalNetnsPrefix = "jrn"

func TestUnwritableStateDirFailsStartUpWithOneLineNamingIt(t *testing.T) {
	f := newSimForwarder(t, svidtest.NewTrustDomain(t, "test.nsm"), journalNetnsPrefix)
	notADir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(notADir, nil, 0o600))
	f.cfg.StateDir = notADir

	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	var phases lifecycle.Lifecycle
	defer phases.Stop(ctx)
	err := startIn(ctx, f.node, abort, f.cfg, &phases, ConnectVPP)
	require.ErrorContains(t, err, "NSM_STATE_DIR="+notADir)
	require.NotContains(t, err.Error(), "\n")
}

// A kernel connection of the previous run that is never requested again loses its policy rule
// and routes in the client's namespace once the token lifetime has passed.
func TestStartRemovesKernelStateOfAConnectionThatDiedWhileDown(t *testing.T) {
	const tokenLifetime = time.Second
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	_, registrySocket := serveRegistry(t, domain)
	node, client := vppsimtest.NewNetns(t, journalNetnsPrefix), vppsimtest.NewNetns(t, journalNetnsPrefix)
	sim := vppsimtest.StartSim(t, node.Name)
	t.Setenv("NSM_MAX_TOKEN_LIFETIME", tokenLifetime.String())
	cfg, _ := forwarderEnv(t, domain, registrySocket, sim.APISocket())

	client.MustDo(t, func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nsm-dead"}, PeerName: "nsm-deadp"})
	})
	dead := deadConnection(client.Path())
	previousRun, err := journal.Open(context.Background(), filepath.Join(cfg.StateDir, cfg.Name))
	require.NoError(t, err)
	require.NoError(t, previousRun.Begin(dead.GetId(), dead))
	_, err = markedroutes.NewServer().Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: dead})
	require.NoError(t, err)
	require.NoError(t, previousRun.Commit(dead.GetId(), dead, nil, nil))
	require.NoError(t, previousRun.Close(), "the previous run died")
	require.Len(t, markedRules(t, client), 1, "the previous run's policy rule")

	ctx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	ctx, logged := captureLog(t, ctx)
	var phases lifecycle.Lifecycle
	defer func() { abort(context.Canceled); stopWithin(t, ctx, &phases, 15*time.Second) }()
	require.NoError(t, startIn(ctx, node, abort, cfg, &phases, ConnectVPP))

	require.Contains(t, loggedMessages(logged), "connections with leftovers from a previous run: [dead-conn]")
	require.Eventually(t, func() bool { return len(markedRules(t, client)) == 0 }, 5*time.Second, 20*time.Millisecond,
		"the dead connection's policy rule outlived the token lifetime")
	// The record goes once everything it names is released.
	require.Eventually(t, func() bool {
		onDisk, err := journal.Read(filepath.Join(cfg.StateDir, cfg.Name))
		return err == nil && len(onDisk) == 0
	}, 5*time.Second, 20*time.Millisecond, "the dead connection is still in the journal")
}

func deadConnection(netnsPath string) *networkservice.Connection {
	mechanism := kernel.New("file://" + netnsPath)
	kernel.ToMechanism(mechanism).SetInterfaceName("nsm-dead")
	return &networkservice.Connection{
		Id:        "dead-conn",
		Mechanism: mechanism,
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			DstIpAddrs: []string{"172.16.9.1/32"},
			Policies: []*networkservice.PolicyRoute{{
				From:   "172.16.9.0/24",
				Routes: []*networkservice.Route{{Prefix: "10.9.0.0/16", NextHop: "172.16.9.1"}},
			}},
		}},
	}
}

func markedRules(t *testing.T, ns *vppsimtest.Netns) []string {
	t.Helper()
	var marked []string
	ns.MustDo(t, func() error {
		rules, err := netlink.RuleList(netlink.FAMILY_ALL)
		for _, rule := range rules {
			if rule.Protocol == routeview.ForwarderProtocol {
				marked = append(marked, rule.String())
			}
		}
		return err
	})
	return marked
}
