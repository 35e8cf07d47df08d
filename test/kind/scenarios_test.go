package kind

import (
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// scenario is one directory under testdata/scenarios plus what the e2e test expects of it. The static
// test below holds the manifests to these values, so the e2e checks and the manifests cannot drift.
type scenario struct {
	name       string // directory, and namespace without the "fwd-" prefix
	clientNode string // value of nodeLabel
	nseNode    string
	nseAddr    string // first address of NSM_CIDR_PREFIX: the endpoint's side
	clientAddr string // second address: the client's side
	policies   []policyRoute
}

// policyRoute mirrors networkservice.PolicyRoute as cmd-nse-icmp-responder reads it from YAML.
type policyRoute struct {
	From    string  `yaml:"from"`
	Proto   string  `yaml:"proto"`
	DstPort string  `yaml:"dstport"`
	SrcPort string  `yaml:"srcport"`
	Routes  []route `yaml:"routes"`
}

type route struct {
	Prefix  string `yaml:"prefix"`
	NextHop string `yaml:"nexthop"`
}

var scenarios = []scenario{
	{name: "kernel2kernel", clientNode: "a", nseNode: "a", nseAddr: "172.16.1.100", clientAddr: "172.16.1.101"},
	{name: "kernel2vxlan2kernel", clientNode: "a", nseNode: "b", nseAddr: "172.16.2.100", clientAddr: "172.16.2.101"},
	{name: "policy-route", clientNode: "a", nseNode: "a", nseAddr: "172.16.3.100", clientAddr: "172.16.3.101",
		policies: []policyRoute{
			{From: "172.16.3.201/32", Proto: "6", DstPort: "6666", Routes: []route{{Prefix: "172.16.30.0/24", NextHop: "172.16.3.100"}}},
			{From: "172.16.3.201/32", Proto: "17", SrcPort: "5555", Routes: []route{{Prefix: "172.16.31.0/24"}}},
		}},
}

func (s *scenario) namespace() string { return "fwd-" + s.name }
func (s *scenario) service() string   { return "fwd-" + s.name }
func (s *scenario) remote() bool      { return s.clientNode != s.nseNode }
func (s *scenario) dir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "test", "kind", "testdata", "scenarios", s.name)
}

// renderedScenario is a scenario's objects after kustomize.
type renderedScenario struct {
	nse      workload
	client   pod
	policies []policyRoute
	others   []string // kinds of the remaining objects
}

func renderScenario(t *testing.T, kubectl string, s *scenario) renderedScenario {
	t.Helper()
	out, err := exec.Command(kubectl, "kustomize", s.dir(t)).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize %s: %s", s.dir(t), out)
	docs, err := splitDocuments(s.name, out)
	require.NoError(t, err)
	var r renderedScenario
	kinds := map[string]int{}
	for _, doc := range docs {
		kinds[doc.Kind]++
		switch doc.Kind {
		case "Deployment":
			require.NoError(t, doc.decodeStrict(&r.nse))
		case "Pod":
			require.NoError(t, doc.decodeStrict(&r.client))
		case "ConfigMap":
			var cm configMap
			require.NoError(t, doc.decodeStrict(&cm))
			policies, err := parsePolicies(cm.Data["config.yaml"])
			require.NoError(t, err, "%s: policies", s.name)
			r.policies = policies
		default:
			r.others = append(r.others, doc.Kind)
		}
	}
	for kind, count := range kinds {
		require.Equal(t, 1, count, "%s: the checks know one %s per scenario", s.name, kind)
	}
	return r
}

func TestScenarioManifestsMatchTheirChecks(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: cannot render the scenarios' kustomizations")
	}
	nodes := kindNodeLabels(t)
	forwarderSpec := baseForwarderDaemonSet(t).Spec.Template.Spec
	forwarder := &forwarderSpec.Containers[0]
	for i := range scenarios {
		s := &scenarios[i]
		t.Run(s.name, func(t *testing.T) {
			r := renderScenario(t, kubectl, s)
			require.Equal(t, []string{"Namespace"}, r.others)
			require.Equal(t, s.namespace(), r.nse.Metadata.Namespace)
			require.Equal(t, s.namespace(), r.client.Metadata.Namespace)

			// The names the e2e test reaches the pods by.
			require.Equal(t, "client", r.client.Metadata.Name)
			require.Equal(t, "client", r.client.Metadata.Labels["app"])
			require.Len(t, r.client.Spec.Containers, 1)
			require.Equal(t, clientContainer, r.client.Spec.Containers[0].Name)
			require.Equal(t, "nse", r.nse.Metadata.Name)
			require.Equal(t, map[string]string{"app": "nse"}, r.nse.Spec.Selector.MatchLabels)
			require.Equal(t, "nse", r.nse.Spec.Template.Metadata.Labels["app"])

			require.Equal(t, "kernel://"+s.service()+"/nsm-1", r.client.Metadata.Annotations["networkservicemesh.io"])
			require.Len(t, r.nse.Spec.Template.Spec.Containers, 1)
			nse := &r.nse.Spec.Template.Spec.Containers[0]
			require.Equal(t, s.service(), *findEnv(nse, "NSM_SERVICE_NAMES").Value)

			prefix, err := netip.ParsePrefix(*findEnv(nse, "NSM_CIDR_PREFIX").Value)
			require.NoError(t, err)
			require.Equal(t, 31, prefix.Bits(), "a /31 hands out exactly the two addresses the checks ping")
			require.Equal(t, s.nseAddr, prefix.Addr().String())
			require.Equal(t, s.clientAddr, prefix.Addr().Next().String())

			require.Contains(t, nodes, s.clientNode)
			require.Contains(t, nodes, s.nseNode)
			require.Equal(t, map[string]string{nodeLabel: s.clientNode}, r.client.Spec.NodeSelector)
			require.Equal(t, map[string]string{nodeLabel: s.nseNode}, r.nse.Spec.Template.Spec.NodeSelector)

			// The endpoint gets its identity the way the forwarder does, or mTLS between them fails.
			require.Equal(t, *findEnv(forwarder, spiffeEndpointSocket).Value, *findEnv(nse, spiffeEndpointSocket).Value)
			require.Equal(t, *findEnv(forwarder, "NSM_CONNECT_TO").Value, *findEnv(nse, "NSM_CONNECT_TO").Value)
			require.Equal(t, findMount(forwarder, "spire-agent-socket").MountPath, findMount(nse, "spire-agent-socket").MountPath)
			require.Equal(t, *findVolume(&forwarderSpec, "spire-agent-socket"), *findVolume(&r.nse.Spec.Template.Spec, "spire-agent-socket"),
				"the agent's socket from the node, as the forwarder (and every stock workload) gets it")
			require.Equal(t, "true", r.nse.Spec.Template.Metadata.Labels["spiffe.io/spiffe-id"])

			if s.name == "policy-route" {
				require.Equal(t, s.policies, r.policies, "the checks must probe the policies the endpoint hands out")
				require.Equal(t, "/etc/policy-based-routing/config.yaml", *findEnv(nse, "NSM_PBR_CONFIG_PATH").Value)
				requireValidPolicies(t, r.policies, prefix)
			} else {
				require.Empty(t, r.policies)
			}
		})
	}
}

// requireValidPolicies checks what the forwarder would reject: sources and prefixes that are not
// prefixes, next hops outside the link the routes leave through.
func requireValidPolicies(t *testing.T, policies []policyRoute, link netip.Prefix) {
	t.Helper()
	require.NotEmpty(t, policies)
	for _, p := range policies {
		_, err := netip.ParsePrefix(p.From)
		require.NoError(t, err, "from")
		require.Contains(t, []string{"6", "17"}, p.Proto, "the checks probe TCP and UDP only")
		require.True(t, (p.DstPort == "") != (p.SrcPort == ""), "one port selector per policy keeps the probes unambiguous")
		for _, route := range p.Routes {
			_, err := netip.ParsePrefix(route.Prefix)
			require.NoError(t, err, "prefix")
			if route.NextHop != "" {
				hop, err := netip.ParseAddr(route.NextHop)
				require.NoError(t, err, "nexthop")
				require.True(t, link.Contains(hop), "next hop %s is not on the connection's link %s", hop, link)
			}
		}
	}
}

func parsePolicies(text string) ([]policyRoute, error) {
	decoder := yaml.NewDecoder(strings.NewReader(text))
	decoder.KnownFields(true)
	var policies []policyRoute
	if err := decoder.Decode(&policies); err != nil {
		return nil, err
	}
	return policies, nil
}

func TestScenarioNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenarios {
		require.False(t, seen[s.name], s.name)
		seen[s.name] = true
		require.Equal(t, strings.ToLower(s.name), s.name, "namespaces are lower case")
	}
}
