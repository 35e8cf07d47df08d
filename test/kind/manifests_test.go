package kind

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/liveness"
)

const (
	forwarderName      = "forwarder-vpp"
	nsmSystemNamespace = "nsm-system"
	// stockDeploymentsRef is the deployments-k8s tag the NSM components come from; it matches the sdk in go.mod.
	stockDeploymentsRef = "v1.18.0"
	stockDeploymentsURL = "https://github.com/networkservicemesh/deployments-k8s/"
	healthProbeBinary   = "/bin/grpc-health-probe"
)

func deploymentsDir(t *testing.T, parts ...string) string {
	return filepath.Join(append([]string{repoRoot(t), "deployments"}, parts...)...)
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	docs := readDocuments(t, filepath.Join(dir, "kustomization.yaml"))
	require.Len(t, docs, 1)
	var k kustomization
	require.NoError(t, docs[0].decodeStrict(&k))
	require.Equal(t, "Kustomization", k.Kind)
	return k
}

// baseForwarderDaemonSet reads the DaemonSet of deployments/base through its kustomization, so a file
// that is not listed as a resource is not what gets checked.
func baseForwarderDaemonSet(t *testing.T) workload {
	t.Helper()
	dir := deploymentsDir(t, "base")
	var daemonSets []workload
	for _, resource := range readKustomization(t, dir).Resources {
		for _, doc := range readDocuments(t, filepath.Join(dir, resource)) {
			require.Equal(t, "DaemonSet", doc.Kind, "%s: the base holds the forwarder only", doc)
			var ds workload
			require.NoError(t, doc.decodeStrict(&ds))
			daemonSets = append(daemonSets, ds)
		}
	}
	require.Len(t, daemonSets, 1)
	return daemonSets[0]
}

func baseForwarderContainer(t *testing.T) *container {
	t.Helper()
	ds := baseForwarderDaemonSet(t)
	require.Len(t, ds.Spec.Template.Spec.Containers, 1)
	return &ds.Spec.Template.Spec.Containers[0]
}

func TestDaemonSetReplacesStockForwarder(t *testing.T) {
	ds := baseForwarderDaemonSet(t)
	require.Equal(t, "apps/v1", ds.APIVersion)
	require.Equal(t, forwarderName, ds.Metadata.Name)
	require.Empty(t, ds.Metadata.Namespace, "the namespace is the installer's choice (the overlay sets it)")
	// The selector is immutable: it must equal the stock one, or applying over a stock install fails.
	require.Equal(t, map[string]string{"app": forwarderName}, ds.Spec.Selector.MatchLabels)
	for key, value := range ds.Spec.Selector.MatchLabels {
		require.Equal(t, value, ds.Spec.Template.Metadata.Labels[key], "template labels must match the selector")
	}
	require.Equal(t, "true", ds.Spec.Template.Metadata.Labels["spiffe.io/spiffe-id"],
		"without this label the stock ClusterSPIFFEID gives the forwarder no identity")

	spec := ds.Spec.Template.Spec
	require.True(t, spec.HostPID, "the namespace monitor looks for client pods among the node's processes")
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	require.GreaterOrEqual(t, *spec.TerminationGracePeriodSeconds, 15, "SIGTERM closes live connections; give it time")

	forwarder := spec.Containers[0]
	require.Equal(t, forwarderName, forwarder.Name)
	require.NotNil(t, forwarder.SecurityContext)
	require.True(t, forwarder.SecurityContext.Privileged, "VPP and netlink in other namespaces need a privileged container")
	require.NotEmpty(t, forwarder.Image)
	require.Empty(t, forwarder.Command, "the image's ENTRYPOINT is the forwarder")
	for _, resource := range []string{"cpu", "memory"} {
		require.NotEmpty(t, forwarder.Resources.Requests[resource], "requests.%s", resource)
		require.NotEmpty(t, forwarder.Resources.Limits[resource], "limits.%s", resource)
	}
}

func TestDaemonSetHasNoSRIOVPlumbing(t *testing.T) {
	ds := baseForwarderDaemonSet(t)
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			for _, sriovPath := range []string{"/dev/vfio", "/sys/fs/cgroup", "/var/lib/kubelet"} {
				require.False(t, strings.HasPrefix(v.HostPath.Path, sriovPath),
					"volume %s mounts %s, which only the stock SR-IOV support uses", v.Name, v.HostPath.Path)
			}
		}
	}
	forwarder := baseForwarderContainer(t)
	for _, name := range sriovVariables {
		require.Nil(t, findEnv(forwarder, name), "%s configures SR-IOV, which forwarder-vpp does not have", name)
	}
}

func TestDaemonSetEnvironmentIsWhatTheForwarderReads(t *testing.T) {
	forwarder := baseForwarderContainer(t)
	seen := map[string]bool{}
	for _, env := range forwarder.Env {
		require.False(t, seen[env.Name], "%s is set twice", env.Name)
		seen[env.Name] = true
		require.True(t, env.Name == spiffeEndpointSocket || forwarderVariables[env.Name],
			"%s is not a variable forwarder-vpp reads", env.Name)
		require.True(t, (env.Value == nil) != (env.ValueFrom == nil), "%s needs exactly one of value and valueFrom", env.Name)
	}

	// Each forwarder registers under its own name (the tunnel IP comes from the overlays).
	requireFieldRef(t, forwarder, "NSM_NAME", "metadata.name")

	for _, name := range []string{"NSM_CONNECT_TO", "NSM_LISTEN_ON", spiffeEndpointSocket} {
		socket := unixSocketValue(t, forwarder, name)
		if name == "NSM_LISTEN_ON" {
			continue // the forwarder's own socket; only the probes need to reach it
		}
		requireMountedPath(t, forwarder, name, socket)
	}

	if env := findEnv(forwarder, "NSM_KERNEL_INTERFACE_TYPE"); env != nil {
		_, err := kernelif.Parse(*env.Value)
		require.NoError(t, err, "NSM_KERNEL_INTERFACE_TYPE")
	}
	if env := findEnv(forwarder, "NSM_VPP_INIT"); env != nil {
		require.Contains(t, []string{"AF_PACKET", "AF_XDP", "NONE"}, *env.Value, "NSM_VPP_INIT")
	}
	for _, name := range []string{"NSM_MAX_TOKEN_LIFETIME", "NSM_DIAL_TIMEOUT", "NSM_VPP_MIN_OPERATION_TIMEOUT", "NSM_METRICS_EXPORT_INTERVAL"} {
		if env := findEnv(forwarder, name); env != nil {
			_, err := time.ParseDuration(*env.Value)
			require.NoError(t, err, name)
		}
	}
}

func requireFieldRef(t *testing.T, c *container, name, fieldPath string) {
	t.Helper()
	env := findEnv(c, name)
	require.NotNil(t, env, "%s is not set", name)
	require.NotNil(t, env.ValueFrom, "%s must come from the pod (fieldRef %s)", name, fieldPath)
	require.Equal(t, fieldPath, env.ValueFrom.FieldRef.FieldPath, name)
}

func unixSocketValue(t *testing.T, c *container, name string) string {
	t.Helper()
	env := findEnv(c, name)
	require.NotNil(t, env, "%s is not set", name)
	require.NotNil(t, env.Value, name)
	u, err := url.Parse(*env.Value)
	require.NoError(t, err, name)
	require.Equal(t, "unix", u.Scheme, "%s=%s", name, *env.Value)
	require.True(t, filepath.IsAbs(u.Path), "%s=%s", name, *env.Value)
	return u.Path
}

// requireMountedPath fails unless path lies in a volume the container mounts: a socket outside every
// mount is a file inside the container that no other pod can reach.
func requireMountedPath(t *testing.T, c *container, name, path string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			return
		}
	}
	require.Failf(t, "socket outside every volume", "%s=%s is not under any volumeMount", name, path)
}

// TestDaemonSetRunsOnTheNodesNetwork: VPP takes the node's uplink and tunnels leave from a node
// address, as with the stock forwarder; the pod's own network would give VPP the pod's eth0 and
// a tunnel IP other nodes may not reach.
func TestDaemonSetRunsOnTheNodesNetwork(t *testing.T) {
	spec := baseForwarderDaemonSet(t).Spec.Template.Spec
	require.True(t, spec.HostNetwork)
	require.Equal(t, "ClusterFirstWithHostNet", spec.DNSPolicy, "on the host network, cluster DNS needs this policy")
}

func TestDaemonSetVolumes(t *testing.T) {
	ds := baseForwarderDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	forwarder := &spec.Containers[0]
	for _, m := range forwarder.VolumeMounts {
		require.NotNil(t, findVolume(spec, m.Name), "volumeMount %s has no volume", m.Name)
	}
	for _, v := range spec.Volumes {
		require.NotNil(t, findMount(forwarder, v.Name), "volume %s is not mounted", v.Name)
		// The stock SPIRE install (examples/spire/single_cluster) has no SPIFFE CSI driver: a CSI
		// volume would keep every forwarder pod in ContainerCreating.
		require.Nil(t, v.CSI, "volume %s: no CSI driver is part of the stock install", v.Name)
	}

	// The agent's socket directory on the node, where the stock spire-agent DaemonSet puts it.
	spire := requireHostPath(t, spec, "spire-agent-socket", "/run/spire/sockets", "Directory")
	require.True(t, findMount(forwarder, spire.Name).ReadOnly)
	requireHostPath(t, spec, "nsm-socket", "/var/lib/networkservicemesh", "DirectoryOrCreate")

	// An operator's VPP puts its API socket on the node; the forwarder looks for it at the
	// default NSM_VPP_API_SOCKET, so the vpp volume must be mounted at that socket's directory.
	vpp := requireHostPath(t, spec, "vpp", "/var/run/vpp", "DirectoryOrCreate")
	defaults := configDefaults(t)
	require.Equal(t, filepath.Dir(defaults.VppAPISocket), findMount(forwarder, vpp.Name).MountPath,
		"NSM_VPP_API_SOCKET's default directory")

	// The connection journal must outlive the container and the pod: NSM_STATE_DIR on the node.
	stateDir := defaults.StateDir
	if env := findEnv(forwarder, "NSM_STATE_DIR"); env != nil {
		stateDir = *env.Value
	}
	require.NotEmpty(t, hostPathHolding(spec, forwarder, stateDir), "NSM_STATE_DIR=%s is not on a hostPath volume", stateDir)
}

// requireHostPath requires the volume name to be the node's directory path of the given type.
func requireHostPath(t *testing.T, spec *podSpec, name, path, kind string) *volume {
	t.Helper()
	v := findVolume(spec, name)
	require.NotNil(t, v, "no volume %s", name)
	require.NotNil(t, v.HostPath, "volume %s must be a hostPath", name)
	require.Equal(t, path, v.HostPath.Path, "volume %s", name)
	require.Equal(t, kind, v.HostPath.Type, "volume %s", name)
	return v
}

// hostPathHolding returns the node directory that holds path inside the container, "" when path
// is in the container's own filesystem (lost with the container).
func hostPathHolding(spec *podSpec, c *container, path string) string {
	best, node := "", ""
	for _, m := range c.VolumeMounts {
		v := findVolume(spec, m.Name)
		mount := strings.TrimSuffix(m.MountPath, "/")
		if v == nil || v.HostPath == nil || (path != mount && !strings.HasPrefix(path, mount+"/")) || len(mount) <= len(best) {
			continue
		}
		best, node = mount, filepath.Join(v.HostPath.Path, strings.TrimPrefix(path, mount))
	}
	return node
}

// TestDaemonSetProbes: readiness and start-up ask the forwarder's NSM API as stock does (only a
// forwarder with an SVID can serve). Liveness must not need the SPIRE agent: restarting the
// forwarder cuts the node's data plane, and an agent outage is no reason for it.
func TestDaemonSetProbes(t *testing.T) {
	forwarder := baseForwarderContainer(t)
	listenOn := findEnv(forwarder, "NSM_LISTEN_ON")
	require.NotNil(t, listenOn)
	df := loadDockerfile(t)
	runtime := &df.stages[len(df.stages)-1]

	for kind, p := range map[string]*probe{"startup": forwarder.StartupProbe, "readiness": forwarder.ReadinessProbe} {
		require.NotNil(t, p, "%s probe", kind)
		require.Equal(t, []string{healthProbeBinary, "-spiffe", "-addr=" + *listenOn.Value}, p.Exec.Command, "%s probe", kind)
		require.NotEmpty(t, runtime.copiedFrom(healthProbeBinary), "the runtime image must contain %s", healthProbeBinary)
	}
	live := forwarder.LivenessProbe
	require.NotNil(t, live)
	require.Equal(t, []string{forwarderBinary, "-liveness=" + *listenOn.Value}, live.Exec.Command,
		"the forwarder's own check of its server, which needs no SVID")
	require.NotEmpty(t, runtime.copiedFrom(forwarderBinary))
	require.Greater(t, time.Duration(live.timeout())*time.Second, liveness.DefaultTimeout,
		"the probe's timeout leaves room for the check's own bound")
	// Liveness gives up more slowly than readiness: a busy forwarder leaves service before it is
	// killed, and killing it drops every connection on the node.
	require.Greater(t, live.budget(), forwarder.ReadinessProbe.budget())
	for kind, p := range map[string]*probe{"startup": forwarder.StartupProbe, "readiness": forwarder.ReadinessProbe, "liveness": live} {
		require.Positive(t, p.PeriodSeconds, "%s probe", kind)
		require.Positive(t, p.FailureThreshold, "%s probe", kind)
	}
}

// stockResource matches a deployments-k8s base pinned to a tag: its path and its ref.
var stockResource = regexp.MustCompile(`^` + regexp.QuoteMeta(stockDeploymentsURL) + `((?:apps|examples)/[a-z0-9/_-]+)\?ref=(\S+)$`)

func TestOverlayInstallsStockNSMWithOurForwarder(t *testing.T) {
	dir := deploymentsDir(t, "overlays", "nsm-basic")
	k := readKustomization(t, dir)
	require.Equal(t, nsmSystemNamespace, k.Namespace)

	var stockApps, localResources []string
	for _, resource := range k.Resources {
		if match := stockResource.FindStringSubmatch(resource); match != nil {
			require.Equal(t, stockDeploymentsRef, match[2], "%s: every stock component must come from the same tag", resource)
			stockApps = append(stockApps, match[1])
			continue
		}
		require.NotContains(t, resource, "://", "%s: remote resources must be deployments-k8s apps pinned to a tag", resource)
		_, err := os.Stat(filepath.Join(dir, resource))
		require.NoError(t, err, "resource %s", resource)
		localResources = append(localResources, filepath.Clean(filepath.Join(dir, resource)))
	}
	require.NotContains(t, stockApps, "apps/forwarder-vpp", "the stock forwarder would run next to ours under the same name")
	for _, app := range []string{"apps/nsmgr", "apps/registry-k8s", "apps/admission-webhook-k8s"} {
		require.Contains(t, stockApps, app, "NSM basic needs %s", app)
	}
	require.Contains(t, localResources, deploymentsDir(t, "base"))

	hasNamespace := false
	for _, resource := range localResources {
		if strings.HasSuffix(resource, ".yaml") {
			for _, doc := range readDocuments(t, resource) {
				var ns struct {
					typeMeta `yaml:",inline"`
					Metadata objectMeta `yaml:"metadata"`
				}
				require.NoError(t, doc.decodeStrict(&ns))
				hasNamespace = hasNamespace || (ns.Kind == "Namespace" && ns.Metadata.Name == nsmSystemNamespace)
			}
		}
	}
	require.True(t, hasNamespace, "a fresh cluster has no %s namespace; the overlay must create it", nsmSystemNamespace)
}

// TestKustomizeRendersBase runs kubectl's built-in kustomize, when there is one, on the base: the
// static checks above read files, this one proves kustomize accepts them.
func TestKustomizeRendersBase(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: cannot render the kustomization")
	}
	out, err := exec.Command(kubectl, "kustomize", deploymentsDir(t, "base")).Output()
	require.NoError(t, err, "kubectl kustomize deployments/base")
	docs, err := splitDocuments("kubectl kustomize deployments/base", out)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	var rendered workload
	require.NoError(t, docs[0].decodeStrict(&rendered))
	require.Equal(t, baseForwarderDaemonSet(t), rendered)
}

func TestKindClusterHasTwoLabelledWorkers(t *testing.T) {
	nodes := kindNodeLabels(t)
	require.Len(t, nodes, 2, "kernel2vxlan2kernel needs a client node and a different endpoint node")
	require.NotEqual(t, nodes[0], nodes[1])
}

const nodeLabel = "forwarder-vpp.nsmfwd.io/e2e-node"

// kindNodeLabels returns the value of nodeLabel of each worker in deployments/kind/cluster.yaml.
func kindNodeLabels(t *testing.T) []string {
	t.Helper()
	docs := readDocuments(t, deploymentsDir(t, "kind", "cluster.yaml"))
	require.Len(t, docs, 1)
	var cluster struct {
		typeMeta `yaml:",inline"`
		Nodes    []struct {
			Role   string            `yaml:"role"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"nodes"`
	}
	require.NoError(t, docs[0].decodeStrict(&cluster))
	require.Equal(t, "kind.x-k8s.io/v1alpha4", cluster.APIVersion)
	require.Equal(t, "Cluster", cluster.Kind)
	var values []string
	for _, node := range cluster.Nodes {
		require.Contains(t, []string{"control-plane", "worker"}, node.Role)
		if node.Role == "worker" {
			require.NotEmpty(t, node.Labels[nodeLabel], "worker without %s", nodeLabel)
			values = append(values, node.Labels[nodeLabel])
		}
	}
	slices.Sort(values)
	return values
}
