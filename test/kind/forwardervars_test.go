package kind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
)

// forwarderVariables are the variables forwarder-vpp reads, straight from its configuration. The
// DaemonSet may only set these; TestForwarderHelpListsManifestVariables checks them against the
// built command itself.
var forwarderVariables = func() map[string]bool {
	names := map[string]bool{}
	for _, name := range config.Variables() {
		names[name] = true
	}
	return names
}()

// sriovVariables belong to the stock forwarder's SR-IOV support, which forwarder-vpp does not have:
// a manifest setting them promises something that does not happen.
var sriovVariables = []string{
	"NSM_RESOURCE_POLL_TIMEOUT", "NSM_DEVICE_PLUGIN_PATH", "NSM_POD_RESOURCES_PATH", "NSM_SRIOV_CONFIG_FILE",
	"NSM_PCI_DEVICES_PATH", "NSM_PCI_DRIVERS_PATH", "NSM_CGROUP_PATH", "NSM_VFIO_PATH",
}

// spiffeEndpointSocket is read by go-spiffe's workload API client, not by the forwarder's config.
const spiffeEndpointSocket = "SPIFFE_ENDPOINT_SOCKET"

func TestVariableListsAreDisjoint(t *testing.T) {
	for _, name := range sriovVariables {
		require.False(t, forwarderVariables[name], name)
	}
}

// TestForwarderHelpListsManifestVariables builds the command at the module root and checks that its
// -h output names every NSM_* variable the DaemonSet sets, so a renamed variable cannot leave the
// manifest configuring nothing.
func TestForwarderHelpListsManifestVariables(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "main.go")); err != nil {
		t.Skipf("no forwarder command to ask: %s is missing (the command is built on another branch)", filepath.Join(root, "main.go"))
	}
	binary := filepath.Join(t.TempDir(), "forwarder-vpp")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	help := exec.CommandContext(ctx, binary, "-h")
	help.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err = help.CombinedOutput()
	require.NoError(t, err, "forwarder-vpp -h must exit 0: %s", out)

	forwarder := baseForwarderContainer(t)
	for _, env := range forwarder.Env {
		if env.Name == spiffeEndpointSocket {
			continue
		}
		require.Containsf(t, string(out), env.Name, "the DaemonSet sets %s but forwarder-vpp -h does not list it", env.Name)
	}
}

// configDefaults is the forwarder's configuration with no NSM_* variable set: what a manifest
// that does not set a variable gets.
func configDefaults(t *testing.T) *config.Config {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NSM_") {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}
	cfg, err := config.Load()
	require.NoError(t, err)
	return cfg
}
