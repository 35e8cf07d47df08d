package kind

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The stock install the forwarder replaces, read from a copy of deployments-k8s and
// cmd-forwarder-vpp at v1.18.0: the layout tests compare against it instead of restating it.
// STOCK_REFERENCE_DIR names the copy; by default it is the project's shared reference beside the
// repository. Without it those tests skip and say so; the project's own facts are tested anyway.

const stockReferenceEnv = "STOCK_REFERENCE_DIR"

// stockReferenceDir returns the reference copy, or skips the test when there is none.
func stockReferenceDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(stockReferenceEnv)
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "..", "shared", "reference", "upstream-"+stockDeploymentsRef)
	}
	if _, err := os.Stat(filepath.Join(dir, "deployments-k8s", "apps", "forwarder-vpp", "forwarder.yaml")); err != nil {
		t.Skipf("no stock reference at %s (set %s to a copy of deployments-k8s and cmd-forwarder-vpp %s): %v",
			dir, stockReferenceEnv, stockDeploymentsRef, err)
	}
	return dir
}

func stockDeployments(t *testing.T) string {
	return filepath.Join(stockReferenceDir(t), "deployments-k8s")
}

// stockForwarderDaemonSet is apps/forwarder-vpp's DaemonSet, decoded as strictly as ours.
func stockForwarderDaemonSet(t *testing.T) workload {
	t.Helper()
	docs := readDocuments(t, filepath.Join(stockDeployments(t), "apps", "forwarder-vpp", "forwarder.yaml"))
	require.Len(t, docs, 1)
	var ds workload
	require.NoError(t, docs[0].decodeStrict(&ds), "the object model must cover the stock DaemonSet")
	return ds
}

// renderOffline renders the kustomization at dir (inside deployments/) as kubectl would, with
// the stock remote bases taken from the reference copy instead of GitHub: the tests run without
// network. Stock bases the copy does not hold are left out (the forwarder, the subject of every
// check, is always there); left reports them. It skips without kubectl or the reference.
func renderOffline(t *testing.T, dir string) (docs []document, left []string) {
	t.Helper()
	work, left := offlineTree(t)
	relative, err := filepath.Rel(deploymentsDir(t), dir)
	require.NoError(t, err)
	return kustomizeBuild(t, filepath.Join(work, "deployments", relative)), left
}

// renderStockOffline renders a kustomization of the reference copy, e.g. examples/basic.
func renderStockOffline(t *testing.T, path string) []document {
	t.Helper()
	work, _ := offlineTree(t)
	return kustomizeBuild(t, filepath.Join(work, "stock", path))
}

// offlineTree copies deployments/ and the reference's deployments-k8s side by side and points
// every stock remote base at the copy.
func offlineTree(t *testing.T) (work string, left []string) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH: cannot render kustomizations")
	}
	stock := stockDeployments(t)
	work = t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(work, "stock"), os.DirFS(stock)))
	require.NoError(t, os.CopyFS(filepath.Join(work, "deployments"), os.DirFS(deploymentsDir(t))))
	for _, tree := range []string{"stock", "deployments"} {
		require.NoError(t, filepath.WalkDir(filepath.Join(work, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.Name() != "kustomization.yaml" {
				return err
			}
			left = append(left, localizeKustomization(t, path, filepath.Join(work, "stock"))...)
			return nil
		}))
	}
	return work, left
}

func kustomizeBuild(t *testing.T, dir string) []document {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize %s: %s", dir, out)
	docs, err := splitDocuments(filepath.Base(dir), out)
	require.NoError(t, err)
	return docs
}

// localizeKustomization rewrites the stock remote resources of one kustomization to the copy in
// stock and drops the resources that do not exist, returning what it dropped.
func localizeKustomization(t *testing.T, path, stock string) (dropped []string) {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	var k map[string]any
	require.NoError(t, yaml.Unmarshal(text, &k))
	resources, _ := k["resources"].([]any)
	var kept []any
	for _, r := range resources {
		resource := r.(string)
		if match := stockResource.FindStringSubmatch(resource); match != nil {
			require.Equal(t, stockDeploymentsRef, match[2], "%s: %s", path, resource)
			// kustomize takes no absolute roots: the copy, relative to this kustomization.
			resource, err = filepath.Rel(filepath.Dir(path), filepath.Join(stock, match[1]))
			require.NoError(t, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), resource)); err != nil {
			dropped = append(dropped, strings.TrimPrefix(r.(string), stockDeploymentsURL))
			continue
		}
		kept = append(kept, resource)
	}
	k["resources"] = kept
	text, err = yaml.Marshal(k)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, text, 0o600))
	return dropped
}

// renderedForwarder returns the forwarder DaemonSet among rendered objects.
func renderedForwarder(t *testing.T, docs []document) workload {
	t.Helper()
	var found []workload
	for _, doc := range docs {
		if doc.Kind != "DaemonSet" {
			continue
		}
		var named struct {
			Metadata objectMeta `yaml:"metadata"`
		}
		require.NoError(t, doc.node.Decode(&named))
		if named.Metadata.Name != forwarderName {
			continue // nsmgr: fields the forwarder's model does not need
		}
		var ds workload
		require.NoError(t, doc.decodeStrict(&ds))
		found = append(found, ds)
	}
	require.Len(t, found, 1, "one %s DaemonSet", forwarderName)
	return found[0]
}

// encodeNode writes the document back as YAML, as it was rendered.
func encodeNode(out io.Writer, doc document) error {
	encoder := yaml.NewEncoder(out)
	if err := encoder.Encode(doc.node); err != nil {
		return err
	}
	return encoder.Close()
}
