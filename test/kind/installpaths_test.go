package kind

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The two ways to install forwarder-vpp (docs/deploy.md): the image-only overlay, which is stock
// examples/basic with nothing but the image changed, and the full overlay (nsm-basic), which
// brings this project's DaemonSet.

const (
	ourImage   = "ghcr.io/nsmfwd/forwarder-vpp"
	stockImage = "ghcr.io/networkservicemesh/cmd-forwarder-vpp"
)

var stockBasic = stockDeploymentsURL + "examples/basic?ref=" + stockDeploymentsRef

// releaseVersion is the VERSION file: the tag make image builds and the manifests deploy.
func releaseVersion(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "VERSION"))
	require.NoError(t, err)
	version := strings.TrimSpace(string(text))
	require.Regexp(t, regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`), version, "VERSION")
	return version
}

// TestImageOnlyOverlayIsStockBasicPlusAnImage: the true drop-in is stock examples/basic at the
// pinned tag and one images entry that swaps the stock forwarder image for this release's.
func TestImageOnlyOverlayIsStockBasicPlusAnImage(t *testing.T) {
	k := readKustomization(t, deploymentsDir(t, "overlays", "image-only"))
	require.Equal(t, []string{stockBasic}, k.Resources, "stock examples/basic, and nothing else")
	require.Empty(t, k.Namespace, "examples/basic sets the namespace")
	require.Empty(t, k.Patches, "a patch would make it more than an image swap")
	require.Equal(t, []imageEdit{{Name: stockImage, NewName: ourImage, NewTag: releaseVersion(t)}}, k.Images)
}

// TestManifestsDeployTheReleaseImage: a versioned image everywhere, never :latest, so that what
// runs is what was released and a rollback is a tag away.
func TestManifestsDeployTheReleaseImage(t *testing.T) {
	require.Equal(t, ourImage+":"+releaseVersion(t), baseForwarderContainer(t).Image)
}

// TestStockDaemonSetCanRunOurImage checks, against the stock DaemonSet, what the image-only path
// relies on: the images entry matches the stock image, the stock probes find their binary in our
// image, every stock variable is one we read, and our defaults land where stock mounts the node.
func TestStockDaemonSetCanRunOurImage(t *testing.T) {
	stock := stockForwarderDaemonSet(t)
	spec := &stock.Spec.Template.Spec
	forwarder := &spec.Containers[0]
	name, _, _ := strings.Cut(forwarder.Image, ":")
	require.Equal(t, stockImage, name, "the image-only overlay's images entry must name the stock image")

	df := loadDockerfile(t)
	runtime := &df.stages[len(df.stages)-1]
	for _, p := range []*probe{forwarder.StartupProbe, forwarder.ReadinessProbe, forwarder.LivenessProbe} {
		require.NotEmpty(t, runtime.copiedFrom(p.Exec.Command[0]), "stock probes run %s: our image must have it", p.Exec.Command[0])
	}
	for _, env := range forwarder.Env {
		require.True(t, env.Name == spiffeEndpointSocket || forwarderVariables[env.Name], "stock sets %s, which forwarder-vpp does not read", env.Name)
	}

	defaults := configDefaults(t)
	require.NotEmpty(t, hostPathHolding(spec, forwarder, defaults.StateDir),
		"with stock manifests the default NSM_STATE_DIR=%s must be on the node, or the journal dies with the container", defaults.StateDir)
	require.Equal(t, filepath.Dir(defaults.VppAPISocket), findMount(forwarder, "vpp").MountPath,
		"the default NSM_VPP_API_SOCKET must be where stock mounts the node's VPP directory")
}

// TestImageOnlyOverlayChangesOnlyTheImage renders the image-only overlay and stock examples/basic
// (from the reference copy) and requires the same objects, byte for byte, but for the image.
func TestImageOnlyOverlayChangesOnlyTheImage(t *testing.T) {
	ours, left := renderOffline(t, deploymentsDir(t, "overlays", "image-only"))
	stock := renderStockOffline(t, "examples/basic")
	t.Logf("stock bases not in the reference copy, left out of both renders: %v", left)

	forwarder := renderedForwarder(t, ours)
	require.Equal(t, ourImage+":"+releaseVersion(t), forwarder.Spec.Template.Spec.Containers[0].Image)
	stockForwarder := renderedForwarder(t, stock)
	forwarder.Spec.Template.Spec.Containers[0].Image = stockForwarder.Spec.Template.Spec.Containers[0].Image
	require.Equal(t, stockForwarder, forwarder, "the image-only overlay must change nothing but the image")
	require.Equal(t, len(stock), len(ours))
	for i := range stock {
		want, got := encode(t, stock[i]), encode(t, ours[i])
		if stock[i].Kind == "DaemonSet" {
			got = bytes.ReplaceAll(got, []byte(ourImage+":"+releaseVersion(t)), []byte(stockImage+":"+stockDeploymentsRef))
		}
		require.Equal(t, string(want), string(got), "%s", stock[i])
	}
}

// TestFullOverlayFollowsStockBasic renders the full overlay and stock examples/basic and holds
// the forwarder of one to the other's layout, the stock basic patch (tunnel IP) included.
func TestFullOverlayFollowsStockBasic(t *testing.T) {
	ours, left := renderOffline(t, deploymentsDir(t, "overlays", "nsm-basic"))
	stock := renderStockOffline(t, "examples/basic")
	t.Logf("stock bases not in the reference copy, left out of both renders: %v", left)

	forwarder := renderedForwarder(t, ours)
	require.Equal(t, nsmSystemNamespace, forwarder.Metadata.Namespace)
	require.Equal(t, ourImage+":"+releaseVersion(t), forwarder.Spec.Template.Spec.Containers[0].Image)
	requireFieldRef(t, &forwarder.Spec.Template.Spec.Containers[0], "NSM_TUNNEL_IP", "status.podIP")
	requireStockLayout(t, renderedForwarder(t, stock), forwarder)
}

func encode(t *testing.T, doc document) []byte {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, encodeNode(&out, doc))
	return out.Bytes()
}
