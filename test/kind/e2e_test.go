package kind

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// e2eBudget is what a cold run needs: image build, cluster, SPIRE, then NSM installed by each
	// install path in turn with every scenario on each. make kind-e2e gives it more (Makefile).
	e2eBudget = 90 * time.Minute
	// e2eSwitch is set by make kind-e2e: make test, whose timeout is made for the rest of the
	// suite, leaves the kind suite out.
	e2eSwitch = "KIND_E2E"
	// imageEnv names a forwarder image already in the local Docker to test instead of building one.
	imageEnv     = "FORWARDER_VPP_IMAGE"
	builtImage   = "forwarder-vpp:kind-e2e"
	stockRawURL  = "https://raw.githubusercontent.com/networkservicemesh/deployments-k8s/"
	clientTarget = "pod/client"
	// clientContainer is the scenario's own container in the client pod; NSM injects others next to it.
	clientContainer = "nettools"
)

// installPaths are the two ways docs/deploy.md installs the forwarder, in the order the test takes
// them: the image-only drop-in first, then the full overlay applied over it, which is also the
// upgrade from one to the other.
var installPaths = []string{"image-only", "nsm-basic"}

// TestKindE2E installs NSM with this forwarder in a kind cluster by each install path and runs the
// scenarios of testdata/scenarios on each. make kind-e2e runs it:
//
//	KIND_E2E=1 go test -v -count=1 -timeout 120m -run TestKindE2E ./test/kind/
func TestKindE2E(t *testing.T) {
	if os.Getenv(e2eSwitch) == "" {
		t.Skipf("the kind e2e suite runs with make kind-e2e (%s=1), with a timeout of its own", e2eSwitch)
	}
	// Asked for by name (make kind-e2e), the suite fails when it cannot run: a skip would
	// report success for a suite that did nothing (issue 25).
	if reason := e2eRequirements(); reason != "" {
		t.Fatalf("%s=1, but the kind e2e test needs Docker, kind, kubectl and git: %s "+
			"(without Docker, make k8s-e2e runs the forwarder on a kubelet of this machine)", e2eSwitch, reason)
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < e2eBudget {
		t.Fatalf("go test -timeout leaves %s; the kind e2e test needs %s: run make kind-e2e",
			time.Until(deadline).Round(time.Minute), e2eBudget)
	}
	ctx := t.Context()
	image := forwarderImage(t, ctx)
	c := newCluster(t, ctx)
	c.dumpOnFailure()
	_, err := run(ctx, nil, "kind", "load", "docker-image", image, "--name", c.name)
	require.NoError(t, err)

	installSPIRE(c)
	for _, path := range installPaths {
		if !t.Run(path, func(t *testing.T) {
			scoped := c.forTest(t)
			installNSM(scoped, path, image)
			for i := range scenarios {
				s := &scenarios[i]
				t.Run(s.name, func(t *testing.T) { runScenario(scoped.forTest(t), s) })
			}
		}) {
			return
		}
	}
}

func forwarderImage(t *testing.T, ctx context.Context) string {
	if image := os.Getenv(imageEnv); image != "" {
		t.Logf("testing %s=%s", imageEnv, image)
		return image
	}
	t.Logf("building %s from %s", builtImage, repoRoot(t))
	_, err := run(ctx, nil, "docker", "build", "--build-arg", "VERSION="+releaseVersion(t)+"-kind-e2e", "-t", builtImage, repoRoot(t))
	require.NoError(t, err)
	return builtImage
}

func (c *cluster) forTest(t *testing.T) *cluster {
	scoped := *c
	scoped.t = t
	return &scoped
}

// installSPIRE installs the stock single-cluster SPIRE with the stock ClusterSPIFFEID templates.
func installSPIRE(c *cluster) {
	c.t.Helper()
	c.mustKubectl("apply", "-k", stockDeploymentsURL+"examples/spire/single_cluster?ref="+stockDeploymentsRef)
	c.waitReady("spire", "app=spire-server", 5*time.Minute)
	c.waitReady("spire", "app=spire-agent", 3*time.Minute)
	c.mustKubectl("apply", "-f", stockRawURL+stockDeploymentsRef+"/examples/spire/single_cluster/clusterspiffeid-template.yaml")
	c.mustKubectl("apply", "-f", stockRawURL+stockDeploymentsRef+"/examples/spire/base/clusterspiffeid-webhook-template.yaml")
}

// installNSM applies deployments/overlays/<path> with the release image swapped for the one under
// test, then waits for every NSM pod.
func installNSM(c *cluster, path, image string) {
	c.t.Helper()
	// run trims the output; the newline restores the end of the last line so the image line matches anywhere.
	rendered := []byte(c.mustKubectl("kustomize", deploymentsDir(c.t, "overlays", path)) + "\n")
	release := []byte("image: " + ourImage + ":" + releaseVersion(c.t) + "\n")
	require.Equal(c.t, 1, bytes.Count(rendered, release), "the rendered %s overlay must hold the release image once", path)
	c.apply(bytes.Replace(rendered, release, []byte("image: "+image+"\n"), 1))

	c.mustKubectl("rollout", "status", "-n", nsmSystemNamespace, "daemonset/"+forwarderName, "--timeout=10m")
	c.eventually(5*time.Minute, "every NSM pod ready", func() error {
		_, err := c.kubectl("wait", "-n", nsmSystemNamespace, "--for=condition=ready", "pod", "--all", "--timeout=30s")
		return err
	})
}

// waitReady waits for pods that may not exist yet: kubectl wait fails at once on no match.
func (c *cluster) waitReady(namespace, selector string, timeout time.Duration) {
	c.t.Helper()
	c.eventually(timeout, fmt.Sprintf("pods %s in %s ready", selector, namespace), func() error {
		_, err := c.kubectl("wait", "-n", namespace, "--for=condition=ready", "pod", "-l", selector, "--timeout=30s")
		return err
	})
}

func runScenario(c *cluster, s *scenario) {
	ns := s.namespace()
	c.t.Cleanup(func() { _, _ = c.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false") })
	nodes := slices.Compact([]string{s.clientNode, s.nseNode})
	baseline := map[string][]string{}
	for _, node := range nodes {
		interfaces, err := c.vppInterfaces(c.forwarderOn(node))
		require.NoError(c.t, err)
		baseline[node] = interfaces
	}

	c.mustKubectl("apply", "-k", s.dir(c.t))
	c.waitReady(ns, "app=nse", 3*time.Minute)
	c.waitReady(ns, "app=client", 5*time.Minute)
	c.requireConnected(s)
	c.requireMechanism(s)

	if len(s.policies) > 0 {
		before := c.policyState(s)
		for _, restart := range []struct {
			what string
			do   func(node string)
		}{
			{"the forwarder container restarts in its pod", c.restartForwarderContainer},
			{"the forwarder pod is replaced", c.replaceForwarderPod},
		} {
			restart.do(s.clientNode)
			c.requireConnected(s)
			require.Equal(c.t, before, c.policyState(s),
				"%s: with intact kernel state the policy rules, tables and routes stay as they were", restart.what)
		}
	}

	// Closing the connection must remove what it created, on the endpoint side and in VPP.
	c.mustKubectl("delete", "-n", ns, clientTarget, "--timeout=2m")
	c.eventually(2*time.Minute, "endpoint address released", func() error {
		out, err := c.kubectl("exec", "-n", ns, "deploy/nse", "--", "ip", "addr")
		if err != nil {
			return err
		}
		if strings.Contains(out, "inet "+s.nseAddr+"/") {
			return fmt.Errorf("the endpoint still holds %s after Close:\n%s", s.nseAddr, out)
		}
		return nil
	})
	for _, node := range nodes {
		forwarder := c.forwarderOn(node)
		c.eventually(2*time.Minute, "VPP interfaces back to baseline on node "+node, func() error {
			now, err := c.vppInterfaces(forwarder)
			if err == nil && !slices.Equal(now, baseline[node]) {
				err = fmt.Errorf("VPP interfaces %v, before the scenario %v", now, baseline[node])
			}
			return err
		})
	}
	c.mustKubectl("delete", "namespace", ns, "--timeout=3m")
}

// requireConnected checks both ends hold their addresses and reach each other through nsm-1.
func (c *cluster) requireConnected(s *scenario) {
	c.t.Helper()
	ns := s.namespace()
	clientAddrs := []string{s.clientAddr}
	for _, p := range s.policies {
		clientAddrs = append(clientAddrs, netip.MustParsePrefix(p.From).Addr().String())
	}
	c.eventually(2*time.Minute, "client addresses on nsm-1", func() error {
		out, err := c.kubectl("exec", "-n", ns, clientTarget, "-c", clientContainer, "--", "ip", "addr", "show", "dev", "nsm-1")
		if err != nil {
			return err
		}
		for _, addr := range clientAddrs {
			if !strings.Contains(out, "inet "+addr+"/") {
				return fmt.Errorf("nsm-1 lacks %s:\n%s", addr, out)
			}
		}
		return nil
	})
	c.eventually(2*time.Minute, "client pings endpoint", func() error {
		_, err := c.kubectl("exec", "-n", ns, clientTarget, "-c", clientContainer, "--", "ping", "-c", "4", "-W", "2", s.nseAddr)
		return err
	})
	c.eventually(time.Minute, "endpoint pings client", func() error {
		_, err := c.kubectl("exec", "-n", ns, "deploy/nse", "--", "ping", "-c", "4", "-W", "2", s.clientAddr)
		return err
	})
}

// requireMechanism checks a remote connection crosses a VXLAN tunnel and a local one stays local.
func (c *cluster) requireMechanism(s *scenario) {
	c.t.Helper()
	out, err := c.vppctl(c.forwarderOn(s.clientNode), "show", "vxlan", "tunnel")
	require.NoError(c.t, err)
	if s.remote() {
		require.Contains(c.t, out, "vni", "a connection between nodes must use a VXLAN tunnel")
		peer, err := c.vppctl(c.forwarderOn(s.nseNode), "show", "vxlan", "tunnel")
		require.NoError(c.t, err)
		require.Contains(c.t, peer, "vni", "the endpoint node's forwarder must terminate the tunnel")
	} else {
		require.NotContains(c.t, out, "vni", "a connection on one node must not leave it")
	}
}

var (
	routeTable = regexp.MustCompile(`dev nsm-1 table (\d+)`)
	ipProto    = map[string]string{"6": "tcp", "17": "udp"}
	// reservedTables are the kernel's own (unspec, default, main, local): a policy there breaks the node.
	reservedTables = []int{0, 253, 254, 255}
)

// requirePolicyRoutes asks the client's kernel how it routes traffic matching each policy and
// returns the table each policy landed in.
func (c *cluster) requirePolicyRoutes(s *scenario) []int {
	c.t.Helper()
	var tables []int
	for _, p := range s.policies {
		destination := netip.MustParsePrefix(p.Routes[0].Prefix).Addr().Next()
		args := []string{"exec", "-n", s.namespace(), clientTarget, "-c", clientContainer, "--", "ip", "route", "get",
			destination.String(), "from", netip.MustParsePrefix(p.From).Addr().String(), "ipproto", ipProto[p.Proto]}
		if p.DstPort != "" {
			args = append(args, "dport", p.DstPort)
		} else {
			args = append(args, "sport", p.SrcPort)
		}
		out := c.mustKubectl(args...)
		match := routeTable.FindStringSubmatch(out)
		require.NotNil(c.t, match, "policy %+v is not routed through nsm-1 by its own table: %s", p, out)
		if hop := p.Routes[0].NextHop; hop != "" {
			require.Contains(c.t, out, "via "+hop+" ", "policy %+v", p)
		}
		table, err := strconv.Atoi(match[1])
		require.NoError(c.t, err)
		require.NotContains(c.t, reservedTables, table, "policy %+v uses a kernel table", p)
		require.NotContains(c.t, tables, table, "two policies share table %d", table)
		tables = append(tables, table)
	}
	return tables
}

// policyState is what the client's kernel holds for the scenario's policies: the table each
// policy is routed by, the rules, and the routes of those tables.
type policyState struct {
	tables []int
	rules  string
	routes map[int]string
}

func (c *cluster) policyState(s *scenario) policyState {
	c.t.Helper()
	inClient := func(args ...string) string {
		return c.mustKubectl(append([]string{"exec", "-n", s.namespace(), clientTarget, "-c", clientContainer, "--"}, args...)...)
	}
	state := policyState{tables: c.requirePolicyRoutes(s), rules: inClient("ip", "rule", "show"), routes: map[int]string{}}
	for _, table := range state.tables {
		state.routes[table] = inClient("ip", "route", "show", "table", strconv.Itoa(table))
	}
	return state
}

// restartForwarderContainer kills the forwarder's container, VPP with it, as a crash would: the
// kubelet starts it again in the same pod (same name, so the same NSM_NAME).
func (c *cluster) restartForwarderContainer(node string) {
	c.t.Helper()
	pod := c.forwarderOn(node)
	uid := c.mustKubectl("get", "pod", "-n", nsmSystemNamespace, pod, "-o", "jsonpath={.metadata.uid}")
	restarts := c.forwarderRestarts(pod)
	containerID := c.mustKubectl("get", "pod", "-n", nsmSystemNamespace, pod, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	_, id, ok := strings.Cut(containerID, "://")
	require.True(c.t, ok, "container ID %q", containerID)
	// A kind node is a Docker container; its CRI stops the forwarder's container at once.
	_, err := run(c.ctx, nil, "docker", "exec", c.nodeNamed(node), "crictl", "stop", "--timeout", "0", id)
	require.NoError(c.t, err)
	c.eventually(5*time.Minute, "forwarder container restarted and ready on node "+node, func() error {
		if now := c.forwarderRestarts(pod); now <= restarts {
			return fmt.Errorf("restart count of %s still %d", pod, now)
		}
		_, err := c.kubectl("wait", "-n", nsmSystemNamespace, "--for=condition=ready", "pod/"+pod, "--timeout=30s")
		return err
	})
	require.Equal(c.t, uid, c.mustKubectl("get", "pod", "-n", nsmSystemNamespace, pod, "-o", "jsonpath={.metadata.uid}"),
		"the pod must be the same one: only its container restarted")
}

func (c *cluster) forwarderRestarts(pod string) int {
	c.t.Helper()
	out := c.mustKubectl("get", "pod", "-n", nsmSystemNamespace, pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
	count, err := strconv.Atoi(out)
	require.NoError(c.t, err, "restartCount %q", out)
	return count
}

// replaceForwarderPod deletes the forwarder's pod; the DaemonSet creates a new one (a new name).
func (c *cluster) replaceForwarderPod(node string) {
	c.t.Helper()
	old := c.forwarderOn(node)
	c.mustKubectl("delete", "pod", "-n", nsmSystemNamespace, old, "--timeout=2m")
	c.eventually(5*time.Minute, "new forwarder ready on node "+node, func() error {
		name, err := c.findForwarderOn(node)
		if err != nil {
			return err
		}
		if name == old {
			return fmt.Errorf("%s is still the forwarder on node %s", old, node)
		}
		_, err = c.kubectl("wait", "-n", nsmSystemNamespace, "--for=condition=ready", "pod/"+name, "--timeout=30s")
		return err
	})
}

// vppInterfaces lists the names of the interfaces of the forwarder's VPP.
func (c *cluster) vppInterfaces(forwarderPod string) ([]string, error) {
	out, err := c.vppctl(forwarderPod, "show", "interface")
	if err != nil {
		return nil, err
	}
	return vppInterfaceNames(out), nil
}

// vppInterfaceNames reads the first column of `show interface` rows; the header and the counter
// continuation lines are indented.
func vppInterfaceNames(showInterface string) []string {
	var names []string
	for _, line := range strings.Split(showInterface, "\n") {
		if line != "" && line[0] != ' ' && line[0] != '\t' {
			names = append(names, strings.Fields(line)[0])
		}
	}
	slices.Sort(names)
	return names
}
