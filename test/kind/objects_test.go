package kind

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The Kubernetes objects below model only the fields our manifests use. Decoding is strict, so a
// misspelt or misplaced field in a manifest fails here instead of being dropped by the API server.

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type typeMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

type workload struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta   `yaml:"metadata"`
	Spec     workloadSpec `yaml:"spec"`
}

type workloadSpec struct {
	Replicas       *int            `yaml:"replicas"`
	Selector       labelSelector   `yaml:"selector"`
	UpdateStrategy *updateStrategy `yaml:"updateStrategy"`
	Template       podTemplate     `yaml:"template"`
}

type updateStrategy struct {
	Type string `yaml:"type"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type pod struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	HostNetwork                   bool              `yaml:"hostNetwork"`
	DNSPolicy                     string            `yaml:"dnsPolicy"`
	HostPID                       bool              `yaml:"hostPID"`
	TerminationGracePeriodSeconds *int              `yaml:"terminationGracePeriodSeconds"`
	NodeSelector                  map[string]string `yaml:"nodeSelector"`
	Containers                    []container       `yaml:"containers"`
	Volumes                       []volume          `yaml:"volumes"`
}

type container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	ImagePullPolicy string           `yaml:"imagePullPolicy"`
	Command         []string         `yaml:"command"`
	SecurityContext *securityContext `yaml:"securityContext"`
	Env             []envVar         `yaml:"env"`
	VolumeMounts    []volumeMount    `yaml:"volumeMounts"`
	Resources       resources        `yaml:"resources"`
	StartupProbe    *probe           `yaml:"startupProbe"`
	ReadinessProbe  *probe           `yaml:"readinessProbe"`
	LivenessProbe   *probe           `yaml:"livenessProbe"`
}

type securityContext struct {
	Privileged bool `yaml:"privileged"`
}

type envVar struct {
	Name      string        `yaml:"name"`
	Value     *string       `yaml:"value"`
	ValueFrom *envVarSource `yaml:"valueFrom"`
}

type envVarSource struct {
	FieldRef struct {
		FieldPath string `yaml:"fieldPath"`
	} `yaml:"fieldRef"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	SubPath   string `yaml:"subPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

type probe struct {
	Exec struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
	SuccessThreshold    int `yaml:"successThreshold"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

// budget is how long the probe lets a container fail before it acts, in seconds.
func (p *probe) budget() int {
	return p.InitialDelaySeconds + p.PeriodSeconds*p.FailureThreshold
}

// timeout is timeoutSeconds as Kubernetes applies it (1 when unset).
func (p *probe) timeout() int {
	return max(p.TimeoutSeconds, 1)
}

type volume struct {
	Name     string `yaml:"name"`
	HostPath *struct {
		Path string `yaml:"path"`
		Type string `yaml:"type"`
	} `yaml:"hostPath"`
	CSI *struct {
		Driver   string `yaml:"driver"`
		ReadOnly bool   `yaml:"readOnly"`
	} `yaml:"csi"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
}

type configMap struct {
	typeMeta `yaml:",inline"`
	Metadata objectMeta        `yaml:"metadata"`
	Data     map[string]string `yaml:"data"`
}

type kustomization struct {
	typeMeta  `yaml:",inline"`
	Namespace string      `yaml:"namespace"`
	Resources []string    `yaml:"resources"`
	Images    []imageEdit `yaml:"images"`
	Patches   []struct {
		Path string `yaml:"path"`
	} `yaml:"patches"`
}

// imageEdit is one entry of a kustomization's images: it renames every container image called Name.
type imageEdit struct {
	Name    string `yaml:"name"`
	NewName string `yaml:"newName"`
	NewTag  string `yaml:"newTag"`
}

// document is one YAML document of a manifest file, kept raw until its kind is known.
type document struct {
	file string
	typeMeta
	node *yaml.Node
}

func (d document) String() string { return fmt.Sprintf("%s %s", d.file, d.Kind) }

// decodeStrict decodes the document into out, refusing fields that out does not model.
func (d document) decodeStrict(out any) error {
	var buf bytes.Buffer
	encoder := yaml.NewEncoder(&buf)
	if err := encoder.Encode(d.node); err != nil {
		return err
	}
	decoder := yaml.NewDecoder(&buf)
	decoder.KnownFields(true)
	if err := decoder.Decode(out); err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	return nil
}

func readDocuments(t *testing.T, path string) []document {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	docs, err := splitDocuments(filepath.Base(path), text)
	require.NoError(t, err)
	return docs
}

func splitDocuments(file string, text []byte) ([]document, error) {
	var docs []document
	decoder := yaml.NewDecoder(bytes.NewReader(text))
	for {
		node := new(yaml.Node)
		err := decoder.Decode(node)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		doc := document{file: file, node: node}
		if err := node.Decode(&doc.typeMeta); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if doc.Kind == "" {
			return nil, fmt.Errorf("%s: a document without kind", file)
		}
		docs = append(docs, doc)
	}
}

// repoRoot is two levels up from the package directory, where go test runs the tests.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

func findEnv(c *container, name string) *envVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func findMount(c *container, name string) *volumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func findVolume(spec *podSpec, name string) *volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}
