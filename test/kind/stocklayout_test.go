package kind

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Deliberate deviations from the stock forwarder DaemonSet; docs/deploy.md explains each one.
var (
	// sriovOnlyVolumes serve the stock SR-IOV support, which forwarder-vpp does not have.
	sriovOnlyVolumes = []string{"kubelet-socket", "cgroup", "vfio"}
	// ourVolumes: the forwarder's crash-safe state lives on the node.
	ourVolumes = []string{"forwarder-state"}
	// ourVariables: the kernel interface kind, and the state directory spelled out.
	ourVariables = []string{"NSM_KERNEL_INTERFACE_TYPE", "NSM_STATE_DIR"}
)

// TestDaemonSetFollowsTheStockLayout holds deployments/base to apps/forwarder-vpp of the stock
// install, except for the deviations above and the liveness probe.
func TestDaemonSetFollowsTheStockLayout(t *testing.T) {
	requireStockLayout(t, stockForwarderDaemonSet(t), baseForwarderDaemonSet(t))
}

// requireStockLayout fails where ours differs from stock other than by a listed deviation.
func requireStockLayout(t *testing.T, stock, ours workload) {
	t.Helper()
	require.Equal(t, stock.Metadata.Name, ours.Metadata.Name)
	require.Equal(t, stock.Metadata.Namespace, ours.Metadata.Namespace)
	require.Equal(t, stock.Metadata.Labels, ours.Metadata.Labels)
	require.Equal(t, stock.Spec.Selector, ours.Spec.Selector, "the selector is immutable: applying over stock needs the same one")
	require.Equal(t, stock.Spec.Template.Metadata.Labels, ours.Spec.Template.Metadata.Labels)

	s, o := &stock.Spec.Template.Spec, &ours.Spec.Template.Spec
	require.Equal(t, s.HostNetwork, o.HostNetwork, "hostNetwork")
	require.Equal(t, s.DNSPolicy, o.DNSPolicy, "dnsPolicy")
	require.Equal(t, s.HostPID, o.HostPID, "hostPID")
	require.Len(t, o.Containers, len(s.Containers))
	sc, oc := &s.Containers[0], &o.Containers[0]
	require.Equal(t, sc.Name, oc.Name)
	require.Equal(t, sc.ImagePullPolicy, oc.ImagePullPolicy)
	require.Equal(t, sc.SecurityContext, oc.SecurityContext)
	require.Equal(t, sc.Command, oc.Command)

	for _, env := range sc.Env {
		mine := findEnv(oc, env.Name)
		require.NotNil(t, mine, "the stock DaemonSet sets %s", env.Name)
		require.Equal(t, env, *mine, "%s as stock", env.Name)
	}
	for _, env := range oc.Env {
		require.True(t, findEnv(sc, env.Name) != nil || slices.Contains(ourVariables, env.Name),
			"%s is neither stock nor a documented addition", env.Name)
	}

	for _, v := range s.Volumes {
		mine := findVolume(o, v.Name)
		if slices.Contains(sriovOnlyVolumes, v.Name) {
			require.Nil(t, mine, "volume %s serves SR-IOV only", v.Name)
			continue
		}
		require.NotNil(t, mine, "the stock DaemonSet has volume %s", v.Name)
		require.Equal(t, v, *mine, "volume %s as stock", v.Name)
		require.Equal(t, *findMount(sc, v.Name), *findMount(oc, v.Name), "volume %s mounted as stock", v.Name)
	}
	for _, v := range o.Volumes {
		require.True(t, findVolume(s, v.Name) != nil || slices.Contains(ourVolumes, v.Name),
			"volume %s is neither stock nor a documented addition", v.Name)
	}

	for _, kind := range []string{"requests", "limits"} {
		stockAmounts, ourAmounts := sc.Resources.Requests, oc.Resources.Requests
		if kind == "limits" {
			stockAmounts, ourAmounts = sc.Resources.Limits, oc.Resources.Limits
		}
		for resource, amount := range stockAmounts {
			require.GreaterOrEqual(t, quantity(t, ourAmounts[resource]), quantity(t, amount),
				"%s.%s: at least stock's %s", kind, resource, amount)
		}
	}

	probes := []struct {
		kind         string
		stock, ours  *probe
		sameCommands bool
	}{
		{"startup", sc.StartupProbe, oc.StartupProbe, true},
		{"readiness", sc.ReadinessProbe, oc.ReadinessProbe, true},
		{"liveness", sc.LivenessProbe, oc.LivenessProbe, false},
	}
	for _, p := range probes {
		require.NotNil(t, p.ours, "%s probe", p.kind)
		require.GreaterOrEqual(t, p.ours.budget(), p.stock.budget(), "%s probe gives up sooner than stock", p.kind)
		require.GreaterOrEqual(t, p.ours.timeout(), p.stock.timeout(), "%s probe times out sooner than stock", p.kind)
		if p.sameCommands {
			require.Equal(t, p.stock.Exec.Command, p.ours.Exec.Command, "%s probe as stock", p.kind)
		} else {
			require.NotContains(t, p.ours.Exec.Command, "-spiffe", "%s probe must not need the SPIRE agent", p.kind)
		}
	}
}

// quantity reads a Kubernetes CPU or memory quantity ("150m", "1", "350Mi", "1G") in
// milli-units or bytes; the manifests use no other forms.
func quantity(t *testing.T, q string) float64 {
	t.Helper()
	require.NotEmpty(t, q, "missing quantity")
	for suffix, factor := range map[string]float64{
		"m": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1e3, "M": 1e6, "G": 1e9,
	} {
		if number, ok := strings.CutSuffix(q, suffix); ok {
			value, err := strconv.ParseFloat(number, 64)
			require.NoError(t, err, "quantity %q", q)
			return value * factor
		}
	}
	value, err := strconv.ParseFloat(q, 64)
	require.NoError(t, err, "quantity %q", q)
	return value * 1000 // whole CPUs in milli-units (memory is never written without a suffix here)
}

func TestQuantity(t *testing.T) {
	require.Equal(t, 150.0, quantity(t, "150m"))
	require.Equal(t, 1000.0, quantity(t, "1"))
	require.Equal(t, float64(350<<20), quantity(t, "350Mi"))
	require.Greater(t, quantity(t, "1Gi"), quantity(t, "500Mi"))
}
