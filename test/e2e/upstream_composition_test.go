package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// features/nse-composition as deployments-k8s v1.18.0 runs it (issue 24): one NetworkService,
// nse-composition, served by five endpoints on the client's node, each hop chosen by the
// service's matches from the requester's labels: the client (no labels) gets the firewall, the
// firewall (app:firewall) passthrough-1, and so on to passthrough-3, which gets the gateway
// (app:gateway, nse-kernel handing out 172.16.1.100/31). The firewall and pass-through endpoints
// are VPP endpoints like cmd-nse-firewall-vpp (e2e-nse-firewall-vpp: memif in, memif onward,
// cross-connected in their own VPP); the firewall's ACL lets ICMP and TCP to 8080 through and
// not TCP to 80. One forwarder carries all five hops: kernel to memif, memif to memif three
// times, memif to kernel. The README's checks: ping the gateway, an HTTP GET to its port 8080
// answered and one to its port 80 not (a listener on both ports in the gateway pod, nginx's
// stand-in), ping the client back. Then Close leaves nothing in any pod, any pod's VPP (its
// interfaces, memif sockets and ACLs), the node or the forwarder's VPP. Real VPP only: the
// simulator's memif never connects to a peer.

// compositionHops are the composition's VPP endpoints in the order the matches chain them, and
// the label each registers with (app:<name>).
var compositionHops = []string{"firewall", "passthrough-1", "passthrough-2", "passthrough-3"}

// compositionService is the example's NetworkService: each match sends a requester with the
// source label app:X to the endpoint labelled as the next hop; the last, without a source
// selector, sends everyone else (the client) to the firewall.
func compositionService() *registryapi.NetworkService {
	service := &registryapi.NetworkService{Name: "nse-composition", Payload: "ETHERNET"}
	next := append(slices.Clone(compositionHops[1:]), "gateway")
	for i, from := range compositionHops {
		service.Matches = append(service.Matches, &registryapi.Match{
			SourceSelector: map[string]string{"app": from},
			Routes:         []*registryapi.Destination{{DestinationSelector: map[string]string{"app": next[i]}}},
		})
	}
	service.Matches = append(service.Matches, &registryapi.Match{
		Routes: []*registryapi.Destination{{DestinationSelector: map[string]string{"app": compositionHops[0]}}},
	})
	return service
}

// compositionFirewallRules are the firewall's config.yaml: ICMP and TCP to 8080 permitted, TCP
// to 80 denied (and, as every VPP ACL, whatever no rule permits).
const compositionFirewallRules = `allow icmp:
  ispermit: 1
  proto: 1
  srcportoricmptypelast: 65535
  dstportoricmpcodelast: 65535
allow tcp8080:
  ispermit: 1
  proto: 6
  srcportoricmptypelast: 65535
  dstportoricmpcodefirst: 8080
  dstportoricmpcodelast: 8080
forbid tcp80:
  proto: 6
  srcportoricmptypelast: 65535
  dstportoricmpcodefirst: 80
  dstportoricmpcodelast: 80
`

func TestUpstreamFeaturesNseCompositionVPP(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, func(t *testing.T, realVPP string) {
		if realVPP == "" {
			t.Skip(noMemifOnSimulator)
		}
		if skipReason != "" {
			t.Skip(skipReason)
		}
		sc := withReport(upstreamScenario("fcvp", 1, realVPP), "upstream features/nse-composition (VPP endpoints, ACL)")
		ctx, d, rep := startScenario(t, sc, shortScenarioTime)
		node := d.Nodes[0]

		// The gateway registers the service with its matches: the harness's NetworkService
		// resource.
		serviceFile := filepath.Join(t.TempDir(), "service.json")
		require.NoError(t, domain.WriteServiceFile(serviceFile, compositionService()))
		gateway, err := d.StartEndpoint(ctx, node, "nse-kernel", "nse-composition", "172.16.1.100/31",
			domain.WithServiceFile(serviceFile), domain.WithLabels(map[string]string{"app": "gateway"}))
		require.NoError(t, err)
		serveHTTPIn(t, gateway.Pod.Netns, ":80", ":8080")
		rules := filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(rules, []byte(compositionFirewallRules), 0o600))
		hops := make([]*domain.VPPEndpoint, len(compositionHops))
		ends := make([]memifEnd, len(compositionHops))
		idleACLs := make([]string, len(compositionHops))
		for i, name := range compositionHops {
			acl := ""
			if name == "firewall" {
				acl = rules
			}
			hops[i], err = d.StartFirewallEndpoint(ctx, node, "nse-"+name, "nse-composition", map[string]string{"app": name}, acl)
			require.NoError(t, err)
			ends[i] = memifEnd{name: hops[i].Name, pod: hops[i].Pod, vpp: hops[i]}
			ends[i].idleMemif = idleMemifOf(ctx, t, ends[i])
			idleACLs[i] = aclsOf(ctx, t, hops[i])
		}

		rep.step("connect: each hop chosen by the service's matches")
		client, err := d.Connect(ctx, node, "alpine", "kernel://nse-composition/"+clientIfname)
		require.NoError(t, err)
		require.Len(t, client.Connections, 1)
		conn := client.Connections[0]
		want := []string{}
		for _, hop := range hops {
			want = append(want, hop.Name)
		}
		want = append(want, gateway.Name)
		var endpoints []string
		for _, name := range pathNames(conn) {
			if slices.Contains(want, name) {
				endpoints = append(endpoints, name)
			}
		}
		require.Equal(t, want, endpoints, "the endpoints on the client's path, in order: %v", pathNames(conn))
		require.Equal(t, []string{"172.16.1.101/32"}, normalizePrefixes(t, conn.GetContext().GetIpContext().GetSrcIpAddrs()), "the client's addresses")
		for i, hop := range hops {
			requireTwoMemifsCrossConnected(ctx, t, hop)
			if compositionHops[i] == "firewall" {
				requireACLOnIncomingMemif(ctx, t, hop)
			}
		}

		rep.step("the README's checks: ping, TCP 8080 reachable, TCP 80 not, ping back")
		requireUpstreamPing(ctx, t, client.Pod.Netns, "172.16.1.101", "172.16.1.100")
		out, err := upstreamWget(ctx, client.Pod.Netns, "172.16.1.100:8080")
		require.NoError(t, err, "port 8080 of the gateway is unreachable through the firewall:\n%s", out)
		// The listener on 80 answers in the gateway's own pod: only the firewall stands between.
		out, err = upstreamWget(ctx, gateway.Pod.Netns, "172.16.1.100:80")
		require.NoError(t, err, "the gateway's port 80 does not answer in its own pod:\n%s", out)
		out, err = upstreamWget(ctx, client.Pod.Netns, "172.16.1.100:80")
		require.Error(t, err, "port 80 of the gateway is reachable through the firewall:\n%s", out)
		requireUpstreamPing(ctx, t, gateway.Pod.Netns, "172.16.1.100", "172.16.1.101")

		rep.step("close leaves nothing")
		require.NoError(t, client.Close(), "the client's Close failed:\n%s", client.Proc.LogTail(20))
		requireEventuallyEmpty(t, "client pod", client.Pod.Netns)
		for i, hop := range hops {
			requirePodVPPIdle(ctx, t, ends[i])
			waitFor(t, 200*time.Millisecond, func() bool { return aclsOf(ctx, t, hop) == idleACLs[i] }, func() string {
				return fmt.Sprintf("%s's VPP after Close holds ACLs:\n%s\nbefore the connection:\n%s", hop.Name, aclsOf(ctx, t, hop), idleACLs[i])
			})
			requireEventuallyEmpty(t, hop.Name+" pod", hop.Pod.Netns)
		}
		requireEventuallyEmpty(t, "nse-kernel pod", gateway.Pod.Netns)
		requireVPPClean(ctx, t, d, node)
		requireNodeKernelClean(t, node)
		if ourDesign(d) {
			requireJournalEmpty(ctx, t, d, node)
		}
		for _, hop := range hops {
			requireEndpointUnregisters(ctx, t, d, hop.Endpoint)
		}
		requireEndpointUnregisters(ctx, t, d, gateway)
	})
}

// requireTwoMemifsCrossConnected requires hop's VPP to hold two connected memifs, the one from
// the forwarder and the one onward, each cross-connected to the other.
func requireTwoMemifsCrossConnected(ctx context.Context, t *testing.T, hop *domain.VPPEndpoint) {
	t.Helper()
	var memifs []string
	var mode string
	waitFor(t, 200*time.Millisecond, func() bool {
		now, err := hop.Interfaces(ctx)
		if err != nil {
			return false
		}
		memifs = memifs[:0]
		for _, i := range now {
			if i.Kind == "memif" && !slices.Contains(hop.IdleInterfaces(), i) {
				memifs = append(memifs, i.Name)
			}
		}
		if len(memifs) != 2 {
			return false
		}
		if mode, err = hop.CLI(ctx, "show mode"); err != nil {
			return false
		}
		return strings.Contains(mode, "l2 xconnect "+memifs[1]) && strings.Contains(mode, "l2 xconnect "+memifs[0])
	}, func() string {
		shown, _ := hop.CLI(ctx, "show memif")
		return fmt.Sprintf("%s's VPP: memifs %v, not two cross-connected ones:\n%s\n%s", hop.Name, memifs, mode, shown)
	})
}

// requireACLOnIncomingMemif requires the firewall's VPP to apply its rules, both ways, on one
// interface.
func requireACLOnIncomingMemif(ctx context.Context, t *testing.T, hop *domain.VPPEndpoint) {
	t.Helper()
	out, err := hop.CLI(ctx, "show acl-plugin interface")
	require.NoError(t, err)
	require.Regexp(t, `(?s)input acl\(s\): \d+.*output acl\(s\): \d+`, out, "%s's VPP applies no ACL", hop.Name)
	acls := aclsOf(ctx, t, hop)
	for _, rule := range []string{`permit .*proto 1 `, `permit .*proto 6 .*dport 8080\s`, `deny .*proto 6 .*dport 80\s`} {
		require.Regexp(t, rule, acls+"\n", "%s's VPP holds no rule %q:\n%s", hop.Name, rule, acls)
	}
}

// aclsOf is the ACLs hop's VPP holds.
func aclsOf(ctx context.Context, t *testing.T, hop *domain.VPPEndpoint) string {
	t.Helper()
	out, err := hop.CLI(ctx, "show acl-plugin acl")
	require.NoError(t, err)
	return out
}

// upstreamWget is the README's `wget -O /dev/null --timeout 5 <address>` from the pod. The alpine
// pod's wget is busybox's, which tries once; here it is GNU wget (this machine's busybox wget
// crashes), told to try once too.
func upstreamWget(ctx context.Context, netnsName, address string) ([]byte, error) {
	return exec.CommandContext(ctx, "ip", "netns", "exec", netnsName,
		"wget", "-O", "/dev/null", "--timeout", "5", "--tries", "1", "http://"+address).CombinedOutput()
}

// serveHTTPIn answers every HTTP request with 200 on each address, from inside the named
// namespace, as the example's nginx does, until the test ends.
func serveHTTPIn(t *testing.T, netnsName string, addresses ...string) {
	t.Helper()
	for _, address := range addresses {
		listener, err := listenIn(netnsName, address)
		require.NoError(t, err)
		server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
		go func() { _ = server.Serve(listener) }()
		t.Cleanup(func() { _ = server.Close() })
	}
}

// listenIn listens from inside the named namespace: the socket stays there once the thread
// leaves.
func listenIn(netnsName, address string) (listener net.Listener, err error) {
	err = inNamespace(netnsName, func() error {
		listener, err = net.Listen("tcp", address)
		return err
	})
	return listener, err
}
