package kind

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// forwarderVariables are the variables forwarder-vpp reads: those of the stock cmd-forwarder-vpp v1.18
// that apply without SR-IOV (issue 2, item 1), plus NSM_KERNEL_INTERFACE_TYPE. The DaemonSet may only
// set these; TestForwarderHelpListsManifestVariables checks them against the built command itself.
var forwarderVariables = map[string]bool{
	"NSM_NAME":                             true,
	"NSM_LABELS":                           true,
	"NSM_NSNAME":                           true,
	"NSM_CONNECT_TO":                       true,
	"NSM_LISTEN_ON":                        true,
	"NSM_MAX_TOKEN_LIFETIME":               true,
	"NSM_REGISTRY_CLIENT_POLICIES":         true,
	"NSM_LOG_LEVEL":                        true,
	"NSM_DIAL_TIMEOUT":                     true,
	"NSM_OPEN_TELEMETRY_ENDPOINT":          true,
	"NSM_METRICS_EXPORT_INTERVAL":          true,
	"NSM_PPROF_ENABLED":                    true,
	"NSM_PPROF_LISTEN_ON":                  true,
	"NSM_PROMETHEUS_LISTEN_ON":             true,
	"NSM_PROMETHEUS_CERT_FILE":             true,
	"NSM_PROMETHEUS_KEY_FILE":              true,
	"NSM_PROMETHEUS_CA_FILE":               true,
	"NSM_PROMETHEUS_MONITOR_CERTIFICATE":   true,
	"NSM_PROMETHEUS_SERVER_HEADER_TIMEOUT": true,
	"NSM_TUNNEL_IP":                        true,
	"NSM_VXLAN_PORT":                       true,
	"NSM_VPP_API_SOCKET":                   true,
	"NSM_VPP_INIT":                         true,
	"NSM_VPP_INIT_PARAMS":                  true,
	"NSM_VPP_MIN_OPERATION_TIMEOUT":        true,
	"NSM_DEVICE_SELECTOR_FILE":             true,
	"NSM_MECHANISM_PRIORITY":               true,
	"NSM_KERNEL_INTERFACE_TYPE":            true,
}

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
