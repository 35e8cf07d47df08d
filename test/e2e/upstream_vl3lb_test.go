package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// deployments-k8s v1.18.0 features/vl3-lb (issue 24, docs/upstream-examples.md): a vl3
// network of service vl3-lb (a vl3 IPAM server, one vl3 endpoint, as the example's replicas: 1),
// three finance-server clients labelled app=finance answering HTTP on 8081 with "Hello! I'm
// <pod>", the load balancer "finance" (itself a vl3 client: selector app:finance, TCP, port
// 8080, target port 8081) and the finance-client, which asks for finance.vl3-lb:8080 by name
// and gets a server's greeting; repeated requests reach every server. Close leaves nothing.
//
// Upstream's load balancer (cmd-lb-vl3-vpp) programs VPP cnat translations; the VPP the harness
// runs is built without the cnat plugin, so the harness's balancer (e2e-nsc with NSM_SELECTOR)
// has the control plane of upstream's and balances with nftables NAT in its pod's kernel. The
// endpoint is the kernel variant of e2e-nse-vl3 on both VPPs, as in vl3-dns: the name lookup
// asks the endpoint's DNS server, which needs an address in its pod. Placement: IPAM, the
// endpoint, the balancer and finance-server-1 on node 1, finance-server-2 and -3 and the
// finance-client on node 2, so that every request crosses both nodes' forwarders twice. The
// balancer is on the endpoint's node because it dials the endpoint's monitor at the URL the
// registry gives: the endpoint's socket on its node, but from another node its nsmgr's TCP
// address on the node network, which the harness's pods, with no cluster network, cannot reach.

const (
	vl3LbService    = "vl3-lb"
	vl3LbServers    = 3
	vl3LbPort       = 8080
	vl3LbTargetPort = 8081
	// vl3LbRequests is how many requests the client makes after its first answer: enough that
	// each of the three servers answers one with all but certainty (random choice per flow).
	vl3LbRequests = 30
)

func TestUpstreamFeaturesVl3Lb(t *testing.T) {
	skipUnlessFeaturesSlow(t)
	onEachVPP(t, runVl3LbExample)
}

func runVl3LbExample(t *testing.T, realVPP string) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	sc := withReport(upstreamScenario("uvlb", 2, realVPP), "upstream features/vl3-lb (kernel vl3 endpoint, kernel NAT balancer)")
	payload := "ETHERNET"
	if realVPP != "" {
		sc.overVxlan, payload = false, "IP"
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortScenarioTime)
	defer cancel()
	r := &vl3Run{d: startDomain(ctx, t, sc), service: vl3LbService}
	rep := reportOf(t)
	rep.step("vl3 network up: IPAM, the endpoint, three finance-servers, the load balancer, the finance-client")
	ipam, err := r.d.StartVl3IPAM(ctx, r.d.Nodes[0], "vl3-ipam", vl3IPv4.network, vl3IPv4.prefixSize)
	require.NoError(t, err)
	r.ipams = append(r.ipams, ipam)
	r.startEndpoint(ctx, t, 0, "nse-vl3-vpp", payload)
	greetings := map[string]bool{}
	for i := range vl3LbServers {
		name := fmt.Sprintf("finance-server-%d", i+1)
		node := min(i, 1)
		server, err := r.d.Connect(ctx, r.d.Nodes[node], name,
			fmt.Sprintf("kernel://%s/%s?app=finance&podName=%s", vl3LbService, clientIfname, name))
		require.NoError(t, err)
		r.clients = append(r.clients, server)
		greeting := "Hello! I'm " + name
		serveGreetingIn(t, server.Pod.Netns, fmt.Sprintf(":%d", vl3LbTargetPort), greeting)
		greetings[greeting] = false
	}
	lb, err := r.d.StartVl3LoadBalancer(ctx, r.d.Nodes[0], "finance", vl3LbService, domain.Vl3LoadBalancer{
		Selector: "app:finance", Protocol: "TCP", Port: vl3LbPort, TargetPort: vl3LbTargetPort,
	})
	require.NoError(t, err)
	r.clients = append(r.clients, lb)
	r.connectClient(ctx, t, 1, "finance-client")
	client := r.clients[len(r.clients)-1]
	requireVl3Tunnel(ctx, t, r.d, realVPP)
	require.NoError(t, lb.WaitBalancing(ctx, vl3LbServers), "the load balancer never selected the three servers:\n%s", lb.Proc.LogTail(30))

	rep.step("the finance-client asks finance.vl3-lb:8080 by name: a server answers, and every server in turn")
	useConnectionDNS(t, client)
	url := fmt.Sprintf("finance.%s:%d", vl3LbService, vl3LbPort)
	var answer string
	waitUntil(t, time.Now().Add(20*time.Second), 500*time.Millisecond, func() bool {
		answer, err = upstreamCurl(ctx, client.Pod.Netns, url)
		return err == nil
	}, func() string {
		return fmt.Sprintf("finance-client's curl %s: %v %s\nload balancer:\n%s", url, err, answer, lb.Proc.LogTail(20))
	})
	for range vl3LbRequests {
		answer, err = upstreamCurl(ctx, client.Pod.Netns, url)
		require.NoError(t, err, "finance-client's curl %s: %s", url, answer)
		_, ok := greetings[answer]
		require.True(t, ok, "finance-client's curl %s answered %q, no server's greeting", url, answer)
		greetings[answer] = true
	}
	for greeting, seen := range greetings {
		require.True(t, seen, "no request reached the server answering %q in %d requests", greeting, vl3LbRequests)
	}

	rep.step("close leaves nothing")
	r.requireCloseLeavesNothing(ctx, t)
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", lb.Pod.Netns, "nft", "list", "tables").CombinedOutput()
	require.NoError(t, err, "nft list tables in the load balancer's pod: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "the load balancer left its NAT behind")
}

// upstreamCurl is the example's `curl -s <url>`, from inside the named namespace (its
// resolv.conf, see useConnectionDNS): the answer without its line end.
func upstreamCurl(ctx context.Context, netnsName, url string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netnsName,
		"curl", "-s", "--max-time", "5", url).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// serveGreetingIn answers every HTTP request with text, from inside the named namespace, as the
// example's http-echo servers do, until the test ends.
func serveGreetingIn(t *testing.T, netnsName, address, text string) {
	t.Helper()
	listener, err := listenIn(netnsName, address)
	require.NoError(t, err)
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, text)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
}
