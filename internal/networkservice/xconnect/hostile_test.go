package xconnect_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	memifmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// A peer that names a namespace by path, instead of passing it as a file descriptor, would have
// the forwarder (privileged, hostPID) build the client's interface, addresses and policy rules in
// whatever namespace the path opens: file:///proc/1/ns/net is the node's own. Every such Request
// is refused with InvalidArgument naming the field, and nothing is created anywhere: not in VPP,
// not in any namespace of the machine, not in the journal, not at the next hop.
func TestNamespaceNamedByPathIsRefusedAndNothingIsCreated(t *testing.T) {
	for _, kind := range []kernelif.Kind{kernelif.Tap, kernelif.Veth} {
		t.Run(kind.String(), func(t *testing.T) {
			eachBackendFor(t, kind, func(t *testing.T, backend vpptest.Backend) {
				nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
				connections, err := journal.Open(context.Background(), t.TempDir())
				require.NoError(t, err)
				t.Cleanup(func() { _ = connections.Close() })
				nothingToRelease := func(context.Context, *journal.Record) error {
					t.Error("a refused Request left something for the journal to release")
					return nil
				}
				h := newHarness(t, backend, kind, kernelNextHop(nseNS, "nse-1"), xconnect.WithJournal(connections, nothingToRelease))

				for name, netnsURL := range map[string]string{
					"the node's namespace":             "file:///proc/1/ns/net",
					"the client's namespace by path":   "file://" + nscNS,
					"the forwarder's own, by omission": "",
				} {
					t.Run(name, func(t *testing.T) {
						ifName := uniqueIfName(t)
						request := kernelRequest(ifName, nscNS, ifName, payload.IP)
						request.GetConnection().GetContext().GetIpContext().Policies = []*networkservice.PolicyRoute{{
							From: nscAddress, Routes: []*networkservice.Route{{Prefix: "10.98.0.0/24"}},
						}}
						parameters := request.GetMechanismPreferences()[0].GetParameters()
						parameters[kernelmech.NetNSURL] = netnsURL
						if netnsURL == "" {
							delete(parameters, kernelmech.NetNSURL)
						}
						requireRefusedLeavingNothing(t, h, connections, request, ifName, "mechanismPreferences[0].parameters.inodeURL")
					})
				}
				t.Run("a memif socket in the node's namespace", func(t *testing.T) {
					ifName := uniqueIfName(t)
					request := kernelRequest(ifName, nscNS, ifName, payload.IP)
					request.MechanismPreferences = []*networkservice.Mechanism{memifmech.NewAbstract("/proc/1/ns/net")}
					requireRefusedLeavingNothing(t, h, connections, request, ifName, "mechanismPreferences[0].parameters.inodeURL")
				})
			})
		})
	}
}

func requireRefusedLeavingNothing(t *testing.T, h *harness, connections *journal.Journal, request *networkservice.NetworkServiceRequest, ifName, field string) {
	t.Helper()
	vppRequests := len(h.vpp.Requests())
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()

	conn, err := h.nsmgr.raw.Request(ctx, request)
	if err == nil {
		// Only on a forwarder that lets the request through: undo it before failing.
		_, _ = h.nsmgr.raw.Close(ctx, conn)
	}

	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), field)
	require.Len(t, h.vpp.Requests(), vppRequests, "VPP was asked to do something")
	require.Empty(t, linksAnywhere(t, ifName), "links of the refused Request")
	require.Empty(t, connections.Records(), "the refused Request was journaled")
	require.Zero(t, h.hop.requests.Load(), "the refused Request reached the next hop")
}

// uniqueIfName names the interface and the connection of one hostile Request, so that what it
// might create can be told from what anyone else on the machine creates. Whatever it names is
// deleted when the test ends, wherever it is.
func uniqueIfName(t *testing.T) string {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := netnsPrefix + "h" + hex.EncodeToString(suffix)
	t.Cleanup(func() {
		for _, found := range linksAnywhere(t, name) {
			if handle, err := netlinkHandleAt(found.netns); err == nil {
				_ = handle.LinkDel(found.link)
				handle.Close()
			}
		}
	})
	return name
}

type foundLink struct {
	netns string
	link  netlink.Link
}

// linksAnywhere searches every network namespace of the machine (those of its processes and the
// named ones) for links named name or carrying it in their alias, as the forwarder's aliases carry
// the connection ID.
func linksAnywhere(t *testing.T, name string) []foundLink {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	named, _ := filepath.Glob("/var/run/netns/*")
	seen := map[string]bool{}
	var found []foundLink
	for _, path := range append(named, paths...) {
		id := netnsID(path)
		if seen[id] || strings.HasPrefix(id, "unopenable") {
			continue
		}
		seen[id] = true
		handle, err := netlinkHandleAt(path)
		if err != nil {
			continue // the process or namespace went away meanwhile
		}
		links, err := handle.LinkList()
		handle.Close()
		require.NoError(t, err, "listing the links of %s", path)
		for _, link := range links {
			if link.Attrs().Name == name || strings.Contains(link.Attrs().Alias, name) {
				found = append(found, foundLink{netns: path, link: link})
			}
		}
	}
	return found
}

func netlinkHandleAt(path string) (*netlink.Handle, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ns.Close() }()
	return netlink.NewHandleAt(ns)
}
