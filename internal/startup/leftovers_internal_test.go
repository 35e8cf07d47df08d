package startup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logrustest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/sdk/pkg/tools/log/logruslogger"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// leaveTaggedTap makes sim hold what a previous forwarder run leaves for a kernel connection: a tap
// whose host side sits in client, tagged with the connection ID as sdk-vpp's tag element does.
func leaveTaggedTap(t *testing.T, sim *vppsim.Sim, client *vppsimtest.Netns, hostName, connectionID string) interface_types.InterfaceIndex {
	t.Helper()
	conn := vppsimtest.Dial(t, sim)
	defer conn.Disconnect()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	created, err := tapv2.NewServiceClient(conn).TapCreateV3(ctx, &tapv2.TapCreateV3{
		ID: ^uint32(0), UseRandomMac: true, NumRxQueues: 1,
		HostIfNameSet: true, HostIfName: hostName, HostNamespaceSet: true, HostNamespace: client.Name,
	})
	require.NoError(t, err)
	_, err = interfaces.NewServiceClient(conn).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{
		IsAdd: true, SwIfIndex: created.SwIfIndex, Tag: connectionID,
	})
	require.NoError(t, err)
	return created.SwIfIndex
}

// captureLog gives ctx a logrus logger whose messages the returned hook records.
func captureLog(t *testing.T, ctx context.Context) (context.Context, *logrustest.Hook) {
	hook := new(logrustest.Hook)
	previous := logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{})
	logrus.AddHook(hook)
	t.Cleanup(func() { logrus.StandardLogger().ReplaceHooks(previous) })
	return log.WithLog(ctx, logruslogger.New(ctx)), hook
}

func loggedMessages(hook *logrustest.Hook) []string {
	var messages []string
	for _, entry := range hook.AllEntries() {
		messages = append(messages, entry.Message)
	}
	return messages
}

// recordPreviousRun writes what a run of a forwarder named name recorded for a connection into
// client whose client's side is the tap at swIfIndex, its host side hostName (the client's
// interface, as the connection's mechanism names it), and leaves the journal as that run's death
// does: unlocked.
func recordPreviousRun(t *testing.T, cfg *config.Config, name string, client *vppsimtest.Netns, connectionID, hostName string, swIfIndex interface_types.InterfaceIndex) {
	t.Helper()
	siblings := journal.AdoptSiblings(fmt.Sprintf("service=%s vpp=%s", cfg.NSName, cfg.VppAPISocket))
	previous, err := journal.Open(context.Background(), filepath.Join(cfg.StateDir, name), siblings)
	require.NoError(t, err)
	conn := deadConnection(client.Path())
	conn.Id = connectionID
	kernel.ToMechanism(conn.GetMechanism()).SetInterfaceName(hostName)
	require.NoError(t, previous.Begin(conn.GetId(), conn))
	require.NoError(t, previous.Commit(conn.GetId(), conn, nil, []journal.Interface{{Tag: connectionID, SwIfIndex: uint32(swIfIndex)}}))
	require.NoError(t, previous.Close())
}

// A forwarder that restarts next to an external VPP finds the tap its previous run recorded,
// reports the connection owning it, and removes it from VPP and the kernel once the connection has
// not been requested again within the token lifetime. The same holds when the previous run was
// another pod (another NSM_NAME) on the same node and state directory. A tap another agent tagged
// on the same VPP stays.
func TestStartExpiresTheTapAPreviousRunRecordedAndNothingForeign(t *testing.T) {
	for _, previousName := range []string{"forwarder-test", "forwarder-replaced-pod"} {
		t.Run(previousName, func(t *testing.T) {
			const tokenLifetime = time.Second
			domain := svidtest.NewTrustDomain(t, "test.nsm")
			_, registrySocket := serveRegistry(t, domain)
			node, client := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
			sim := vppsimtest.StartSim(t, node.Name)
			leftover := leaveTaggedTap(t, sim, client, "fcs-old0", "nsc-conn-of-last-run")
			foreign := leaveTaggedTap(t, sim, client, "cali0", "calico-pod-0")
			require.NoError(t, hostLinkIn(client, "fcs-old0"), "the leftover tap has its kernel side in the client's namespace")
			t.Setenv("NSM_MAX_TOKEN_LIFETIME", tokenLifetime.String())
			cfg, _ := forwarderEnv(t, domain, registrySocket, sim.APISocket())
			require.Equal(t, "forwarder-test", cfg.Name)
			recordPreviousRun(t, cfg, previousName, client, "nsc-conn-of-last-run", "fcs-old0", leftover)

			ctx, abort := context.WithCancelCause(context.Background())
			defer abort(nil)
			ctx, logged := captureLog(t, ctx)
			var phases lifecycle.Lifecycle
			defer func() { abort(context.Canceled); stopWithin(t, ctx, &phases, 15*time.Second) }()
			began := time.Now()
			require.NoError(t, startIn(ctx, node, abort, cfg, &phases, ConnectVPP))

			require.Contains(t, loggedMessages(logged), "connections with leftovers from a previous run: [nsc-conn-of-last-run]")
			require.Eventually(t, func() bool {
				_, held := sim.State().Interfaces[uint32(leftover)]
				return !held
			}, 5*time.Second, 20*time.Millisecond, "the recorded tap outlived the token lifetime")
			require.GreaterOrEqual(t, time.Since(began), tokenLifetime, "the tap was released before its connection could come back")

			deletes := vppsim.RequestsOf[*tapv2.TapDeleteV2](sim)
			require.Len(t, deletes, 1)
			require.Equal(t, leftover, deletes[0].SwIfIndex)
			// VPP answers the delete before the forwarder logs it.
			require.Eventually(t, func() bool {
				return slices.ContainsFunc(loggedMessages(logged), func(message string) bool {
					return strings.HasPrefix(message, "restore: released VPP interface tap0") && strings.Contains(message, "nsc-conn-of-last-run")
				})
			}, 5*time.Second, 20*time.Millisecond, "the release is logged")
			require.ErrorAs(t, hostLinkIn(client, "fcs-old0"), new(netlink.LinkNotFoundError), "the tap's kernel side is gone from the client's namespace")
			require.Contains(t, sim.State().Interfaces, uint32(foreign), "the tap another agent tagged was released")
			require.NoError(t, hostLinkIn(client, "cali0"))
			require.Eventually(t, func() bool {
				records, err := journal.Read(filepath.Join(cfg.StateDir, cfg.Name))
				return err == nil && len(records) == 0
			}, 5*time.Second, 20*time.Millisecond, "the released connection stays in the journal")
			_, err := os.Stat(filepath.Join(cfg.StateDir, "forwarder-replaced-pod"))
			require.True(t, os.IsNotExist(err), "the replaced pod's journal was not adopted")
		})
	}
}

// hostLinkIn looks the named link up in ns: nil when it is there.
func hostLinkIn(ns *vppsimtest.Netns, name string) error {
	return ns.Do(func() error {
		_, err := netlink.LinkByName(name)
		return err
	})
}
