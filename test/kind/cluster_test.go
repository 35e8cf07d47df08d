package kind

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// commandTimeout bounds every single docker, kind or kubectl call: a hung call fails the test with
// the command's name instead of eating the whole go test timeout.
const commandTimeout = 10 * time.Minute

// e2eRequirements returns every reason the end-to-end test cannot run here, or "" when it can.
func e2eRequirements() string {
	var missing []string
	// git: kubectl's kustomize fetches the stock remote bases with it.
	for _, tool := range []string{"docker", "kind", "kubectl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" is not on PATH")
		}
	}
	if _, err := exec.LookPath("docker"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
			missing = append(missing, fmt.Sprintf("`docker info` failed (%v): %s", err, lastLine(out)))
		}
	}
	return strings.Join(missing, "; ")
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// run executes a command with the timeout, logging it, and returns its trimmed stdout; stderr is in the error.
func run(ctx context.Context, stdin []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// cluster is a kind cluster with its own kubeconfig, so the test never touches the user's contexts.
type cluster struct {
	t          *testing.T
	ctx        context.Context
	name       string
	kubeconfig string
}

// newCluster creates the kind cluster of deployments/kind/cluster.yaml and deletes it when the test ends.
func newCluster(t *testing.T, ctx context.Context) *cluster {
	c := &cluster{
		t:          t,
		ctx:        ctx,
		name:       fmt.Sprintf("fwd-e2e-%d", os.Getpid()),
		kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"),
	}
	t.Logf("creating kind cluster %s", c.name)
	t.Cleanup(func() {
		if _, err := run(context.Background(), nil, "kind", "delete", "cluster", "--name", c.name); err != nil {
			t.Errorf("deleting kind cluster %s: %v", c.name, err)
		}
	})
	_, err := run(ctx, nil, "kind", "create", "cluster", "--name", c.name,
		"--config", deploymentsDir(t, "kind", "cluster.yaml"), "--kubeconfig", c.kubeconfig, "--wait", "5m")
	require.NoError(t, err)
	return c
}

func (c *cluster) kubectl(args ...string) (string, error) {
	return run(c.ctx, nil, "kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
}

func (c *cluster) mustKubectl(args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(args...)
	require.NoError(c.t, err)
	return out
}

func (c *cluster) apply(manifests []byte) {
	c.t.Helper()
	_, err := run(c.ctx, manifests, "kubectl", "--kubeconfig", c.kubeconfig, "apply", "-f", "-")
	require.NoError(c.t, err)
}

// eventually retries check until it returns nil or the timeout passes, then fails with its last error.
func (c *cluster) eventually(timeout time.Duration, what string, check func() error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.NoError(c.t, err, "%s: still failing after %s", what, timeout)
		}
		select {
		case <-c.ctx.Done():
			require.NoError(c.t, c.ctx.Err(), what)
		case <-time.After(2 * time.Second):
		}
	}
}

// nodeNamed returns the node carrying nodeLabel=value.
func (c *cluster) nodeNamed(value string) string {
	c.t.Helper()
	name := c.mustKubectl("get", "nodes", "-l", nodeLabel+"="+value, "-o", "jsonpath={.items[0].metadata.name}")
	require.NotEmpty(c.t, name, "no node labelled %s=%s", nodeLabel, value)
	return name
}

// forwarderOn returns the name of the forwarder pod on the node labelled value.
func (c *cluster) forwarderOn(value string) string {
	c.t.Helper()
	name, err := c.findForwarderOn(value)
	require.NoError(c.t, err)
	return name
}

// findForwarderOn is forwarderOn for callers that wait for the pod to appear.
func (c *cluster) findForwarderOn(value string) (string, error) {
	name, err := c.kubectl("get", "pods", "-n", nsmSystemNamespace, "-l", "app="+forwarderName,
		"--field-selector", "spec.nodeName="+c.nodeNamed(value), "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return "", err
	}
	if pods := strings.Fields(name); len(pods) != 1 {
		return "", fmt.Errorf("want one forwarder on node %s, found %q", value, name)
	}
	return name, nil
}

// vppctl runs a VPP CLI command in a forwarder pod; the forwarder's VPP listens on the default CLI socket.
func (c *cluster) vppctl(forwarderPod string, command ...string) (string, error) {
	return c.kubectl(append([]string{"exec", "-n", nsmSystemNamespace, forwarderPod, "--", "vppctl", "-s", "/var/run/vpp/cli.sock"}, command...)...)
}

// dumpOnFailure logs what a failed run needs to be understood: pod states and forwarder logs.
func (c *cluster) dumpOnFailure() {
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		kubeconfig := "--kubeconfig=" + c.kubeconfig
		for _, args := range [][]string{
			{"get", "pods", "-A", "-o", "wide"},
			{"get", "events", "-A", "--sort-by=.lastTimestamp"},
			{"logs", "-n", nsmSystemNamespace, "-l", "app=" + forwarderName, "--tail=200", "--prefix", "--all-containers"},
			{"logs", "-n", nsmSystemNamespace, "-l", "app=" + forwarderName, "--tail=100", "--prefix", "--previous"},
		} {
			out, err := run(ctx, nil, "kubectl", append([]string{kubeconfig}, args...)...)
			c.t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, errOrEmpty(err))
		}
	})
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "\n" + err.Error()
}
