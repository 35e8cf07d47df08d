package config_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/af_packet"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// clearEnv unsets every NSM_* variable for the test, so that the host's environment cannot leak in.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NSM_") {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := config.Load()
	require.NoError(t, err)

	require.Equal(t, "forwarder", cfg.Name)
	require.Equal(t, map[string]string{"p2p": "true"}, cfg.Labels)
	require.Equal(t, "forwarder", cfg.NSName)
	require.Equal(t, "unix:///connect.to.socket", cfg.ConnectTo.String())
	require.Equal(t, "unix:///listen.on.socket", cfg.ListenOn.String())
	require.Equal(t, 10*time.Minute, cfg.MaxTokenLifetime)
	require.Equal(t, []string{"etc/nsm/opa/common/.*.rego", "etc/nsm/opa/registry/.*.rego", "etc/nsm/opa/client/.*.rego"}, cfg.RegistryClientPolicies)
	require.Equal(t, "INFO", cfg.LogLevel)
	require.Equal(t, 750*time.Millisecond, cfg.DialTimeout)
	require.Equal(t, "otel-collector.observability.svc.cluster.local:4317", cfg.OpenTelemetryEndpoint)
	require.Equal(t, 10*time.Second, cfg.MetricsExportInterval)
	require.Equal(t, ":8081", cfg.PrometheusListenOn)
	require.Equal(t, 5*time.Second, cfg.PrometheusServerHeaderTimeout)
	require.False(t, cfg.PrometheusMonitorCertificate)
	// Empty as in the stock forwarder: plain HTTP unless the operator gives a certificate.
	require.Empty(t, cfg.PrometheusCertFile)
	require.Empty(t, cfg.PrometheusKeyFile)
	require.Empty(t, cfg.PrometheusCAFile)
	require.Equal(t, 120*time.Second, cfg.PrometheusMaxBindThreshold)
	require.False(t, cfg.PprofEnabled)
	require.Equal(t, "localhost:6060", cfg.PprofListenOn)
	require.Nil(t, cfg.TunnelIP)
	require.Zero(t, cfg.VxlanPort)
	require.Equal(t, "/var/run/vpp/external/vpp-api.sock", cfg.VppAPISocket)
	require.Equal(t, vppinit.AfPacket, cfg.VppInit)
	require.Empty(t, cfg.VppInitParams)
	require.Equal(t, vppinit.DefaultParams(), cfg.InitParams)
	require.Equal(t, 2*time.Second, cfg.VPPMinOperationTimeout)
	require.Empty(t, cfg.DeviceSelectorFile)
	require.Empty(t, cfg.VlanDomainToDevice)
	require.Empty(t, cfg.MechanismPriority)
	require.Equal(t, kernelif.Auto, cfg.KernelInterfaceType)
	require.Equal(t, "/var/lib/networkservicemesh/forwarder-vpp", cfg.StateDir)
	require.Equal(t, 1024, cfg.MaxHeldDescriptorsPerPeer)
	require.Equal(t, 4096, cfg.MaxHeldDescriptors)
	require.Equal(t, requestcheck.DefaultLimits(), cfg.RequestLimits.Limits(), "the bounds and the variables naming them")
}

func TestEveryVariable(t *testing.T) {
	dir := t.TempDir()
	paramsFile := filepath.Join(dir, "params.yaml")
	require.NoError(t, os.WriteFile(paramsFile, []byte("AF_PACKET:\n  mode: 2\n  rxFrameSize: 2048\n"), 0o600))
	policyFile := filepath.Join(dir, "allow.rego")
	require.NoError(t, os.WriteFile(policyFile, []byte("package nsm\n\ndefault valid = true\n"), 0o600))
	selectorFile := filepath.Join(dir, "devices.yaml")
	require.NoError(t, os.WriteFile(selectorFile, []byte("interfaces:\n  - name: eth1\n    matches:\n      - labelSelector:\n          - via: gw1\n"), 0o600))
	certFile, keyFile, caFile := prometheusFiles(t)
	tlsPair := map[string]string{"NSM_PROMETHEUS_CERT_FILE": certFile, "NSM_PROMETHEUS_KEY_FILE": keyFile}

	// needs are the other variables a value needs to be valid.
	needs := map[string]map[string]string{"NSM_PROMETHEUS_CERT_FILE": tlsPair, "NSM_PROMETHEUS_KEY_FILE": tlsPair, "NSM_PROMETHEUS_CA_FILE": tlsPair}
	cases := []variableCase{
		{"NSM_NAME", "fwd-a", func(t *testing.T, c *config.Config) { require.Equal(t, "fwd-a", c.Name) }},
		{"NSM_LABELS", "p2p:true,zone:b", func(t *testing.T, c *config.Config) {
			require.Equal(t, map[string]string{"p2p": "true", "zone": "b"}, c.Labels)
		}},
		{"NSM_NSNAME", "fwd-ns", func(t *testing.T, c *config.Config) { require.Equal(t, "fwd-ns", c.NSName) }},
		{"NSM_CONNECT_TO", "tcp://10.0.0.1:5001", func(t *testing.T, c *config.Config) {
			require.Equal(t, "10.0.0.1:5001", c.ConnectTo.Host)
		}},
		{"NSM_LISTEN_ON", "unix:///run/fwd.sock", func(t *testing.T, c *config.Config) { require.Equal(t, "/run/fwd.sock", c.ListenOn.Path) }},
		{"NSM_MAX_TOKEN_LIFETIME", "3m", func(t *testing.T, c *config.Config) { require.Equal(t, 3*time.Minute, c.MaxTokenLifetime) }},
		{"NSM_REGISTRY_CLIENT_POLICIES", policyFile, func(t *testing.T, c *config.Config) {
			require.Equal(t, []string{policyFile}, c.RegistryClientPolicies)
		}},
		{"NSM_LOG_LEVEL", "debug", func(t *testing.T, c *config.Config) { require.Equal(t, "debug", c.LogLevel) }},
		{"NSM_DIAL_TIMEOUT", "2s", func(t *testing.T, c *config.Config) { require.Equal(t, 2*time.Second, c.DialTimeout) }},
		{"NSM_OPEN_TELEMETRY_ENDPOINT", "otel:4317", func(t *testing.T, c *config.Config) { require.Equal(t, "otel:4317", c.OpenTelemetryEndpoint) }},
		{"NSM_METRICS_EXPORT_INTERVAL", "30s", func(t *testing.T, c *config.Config) { require.Equal(t, 30*time.Second, c.MetricsExportInterval) }},
		{"NSM_PROMETHEUS_LISTEN_ON", "127.0.0.1:9090", func(t *testing.T, c *config.Config) { require.Equal(t, "127.0.0.1:9090", c.PrometheusListenOn) }},
		{"NSM_PROMETHEUS_SERVER_HEADER_TIMEOUT", "1s", func(t *testing.T, c *config.Config) {
			require.Equal(t, time.Second, c.PrometheusServerHeaderTimeout)
		}},
		{"NSM_PROMETHEUS_MONITOR_CERTIFICATE", "true", func(t *testing.T, c *config.Config) { require.True(t, c.PrometheusMonitorCertificate) }},
		{"NSM_PROMETHEUS_CERT_FILE", certFile, func(t *testing.T, c *config.Config) { require.Equal(t, certFile, c.PrometheusCertFile) }},
		{"NSM_PROMETHEUS_KEY_FILE", keyFile, func(t *testing.T, c *config.Config) { require.Equal(t, keyFile, c.PrometheusKeyFile) }},
		{"NSM_PROMETHEUS_CA_FILE", caFile, func(t *testing.T, c *config.Config) { require.Equal(t, caFile, c.PrometheusCAFile) }},
		{"NSM_PROMETHEUS_MAX_BIND_THRESHOLD", "1m", func(t *testing.T, c *config.Config) { require.Equal(t, time.Minute, c.PrometheusMaxBindThreshold) }},
		{"NSM_PPROF_ENABLED", "true", func(t *testing.T, c *config.Config) { require.True(t, c.PprofEnabled) }},
		{"NSM_PPROF_LISTEN_ON", ":6061", func(t *testing.T, c *config.Config) { require.Equal(t, ":6061", c.PprofListenOn) }},
		{"NSM_TUNNEL_IP", "192.0.2.7", func(t *testing.T, c *config.Config) { require.True(t, net.ParseIP("192.0.2.7").Equal(c.TunnelIP)) }},
		{"NSM_VXLAN_PORT", "4790", func(t *testing.T, c *config.Config) { require.Equal(t, uint16(4790), c.VxlanPort) }},
		{"NSM_VPP_API_SOCKET", filepath.Join(dir, "absent.sock"), func(t *testing.T, c *config.Config) {
			require.Equal(t, filepath.Join(dir, "absent.sock"), c.VppAPISocket)
		}},
		{"NSM_VPP_INIT", "af_xdp", func(t *testing.T, c *config.Config) { require.Equal(t, vppinit.AfXdp, c.VppInit) }},
		{"NSM_VPP_INIT_PARAMS", paramsFile, func(t *testing.T, c *config.Config) {
			require.Equal(t, af_packet.AF_PACKET_API_MODE_IP, c.InitParams.AfPacket.Mode)
			require.Equal(t, uint32(2048), c.InitParams.AfPacket.RxFrameSize)
			require.Equal(t, vppinit.DefaultParams().AfPacket.TxFrameSize, c.InitParams.AfPacket.TxFrameSize, "unset keys keep their defaults")
		}},
		{"NSM_VPP_MIN_OPERATION_TIMEOUT", "5s", func(t *testing.T, c *config.Config) { require.Equal(t, 5*time.Second, c.VPPMinOperationTimeout) }},
		{"NSM_DEVICE_SELECTOR_FILE", selectorFile, func(t *testing.T, c *config.Config) {
			require.Equal(t, map[string]string{"gw1": "eth1"}, c.VlanDomainToDevice)
		}},
		{"NSM_MECHANISM_PRIORITY", "vxlan, KERNEL", func(t *testing.T, c *config.Config) {
			require.Equal(t, []string{"VXLAN", "KERNEL"}, c.MechanismPriority)
		}},
		{"NSM_KERNEL_INTERFACE_TYPE", "veth", func(t *testing.T, c *config.Config) { require.Equal(t, kernelif.Veth, c.KernelInterfaceType) }},
		{"NSM_STATE_DIR", "/var/lib/fwd-state", func(t *testing.T, c *config.Config) { require.Equal(t, "/var/lib/fwd-state", c.StateDir) }},
		{"NSM_MAX_HELD_DESCRIPTORS_PER_PEER", "100", func(t *testing.T, c *config.Config) { require.Equal(t, 100, c.MaxHeldDescriptorsPerPeer) }},
		{"NSM_MAX_HELD_DESCRIPTORS", "5000", func(t *testing.T, c *config.Config) { require.Equal(t, 5000, c.MaxHeldDescriptors) }},
		requestLimitCase("NSM_MAX_REQUEST_MECHANISMS", func(l requestcheck.Limits) requestcheck.Limit { return l.MechanismPreferences }),
		requestLimitCase("NSM_MAX_REQUEST_PATH_SEGMENTS", func(l requestcheck.Limits) requestcheck.Limit { return l.PathSegments }),
		requestLimitCase("NSM_MAX_REQUEST_LABELS", func(l requestcheck.Limits) requestcheck.Limit { return l.Labels }),
		requestLimitCase("NSM_MAX_REQUEST_LABEL_SIZE", func(l requestcheck.Limits) requestcheck.Limit { return l.LabelSize }),
		requestLimitCase("NSM_MAX_REQUEST_ADDRESSES", func(l requestcheck.Limits) requestcheck.Limit { return l.Addresses }),
		requestLimitCase("NSM_MAX_REQUEST_ROUTES", func(l requestcheck.Limits) requestcheck.Limit { return l.Routes }),
		requestLimitCase("NSM_MAX_REQUEST_POLICIES", func(l requestcheck.Limits) requestcheck.Limit { return l.Policies }),
		requestLimitCase("NSM_MAX_REQUEST_POLICY_ROUTES", func(l requestcheck.Limits) requestcheck.Limit { return l.PolicyRoutes }),
		requestLimitCase("NSM_MAX_REQUEST_PREFIXES", func(l requestcheck.Limits) requestcheck.Limit { return l.Prefixes }),
		requestLimitCase("NSM_MAX_REQUEST_NEIGHBORS", func(l requestcheck.Limits) requestcheck.Limit { return l.Neighbors }),
		requestLimitCase("NSM_MAX_REQUEST_DNS_ENTRIES", func(l requestcheck.Limits) requestcheck.Limit { return l.DNSEntries }),
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.variable] = true
		t.Run(tc.variable, func(t *testing.T) {
			clearEnv(t)
			for variable, value := range needs[tc.variable] {
				t.Setenv(variable, value)
			}
			t.Setenv(tc.variable, tc.value)
			cfg, err := config.Load()
			require.NoError(t, err)
			tc.check(t, cfg)
		})
	}
	for _, variable := range config.Variables() {
		require.True(t, covered[variable], "%s has no test case", variable)
	}
}

type variableCase struct {
	variable, value string
	check           func(t *testing.T, cfg *config.Config)
}

// requestLimitCase sets the variable to 7 and expects the bound it names to be 7, named after it.
func requestLimitCase(variable string, limitOf func(requestcheck.Limits) requestcheck.Limit) variableCase {
	return variableCase{variable, "7", func(t *testing.T, c *config.Config) {
		require.Equal(t, requestcheck.Limit{Max: 7, Setting: variable}, limitOf(c.RequestLimits.Limits()))
	}}
}

func TestBadValues(t *testing.T) {
	dir := t.TempDir()
	badParams := filepath.Join(dir, "bad-params.yaml")
	require.NoError(t, os.WriteFile(badParams, []byte("AF_PACKET:\n  rxFrameSise: 2048\n"), 0o600))
	badSelector := filepath.Join(dir, "bad-devices.yaml")
	require.NoError(t, os.WriteFile(badSelector, []byte("interfaces:\n  - matches: []\n"), 0o600))
	notASocket := filepath.Join(dir, "plain-file")
	require.NoError(t, os.WriteFile(notASocket, nil, 0o600))
	certFile, keyFile, caFile := prometheusFiles(t)
	outsideSecrets := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(outsideSecrets, nil, 0o600))
	tlsPair := map[string]string{"NSM_PROMETHEUS_CERT_FILE": certFile, "NSM_PROMETHEUS_KEY_FILE": keyFile}

	cases := []struct{ variable, value string }{
		{"NSM_NAME", " "},
		{"NSM_LABELS", "p2p"},
		{"NSM_NSNAME", ""},
		{"NSM_CONNECT_TO", "http://nsmgr:5001"},
		{"NSM_CONNECT_TO", "tcp://nsmgr"},
		{"NSM_CONNECT_TO", "unix://"},
		{"NSM_CONNECT_TO", "::not a url"},
		{"NSM_LISTEN_ON", "udp://0.0.0.0:1"},
		{"NSM_MAX_TOKEN_LIFETIME", "ten minutes"},
		{"NSM_MAX_TOKEN_LIFETIME", "0s"},
		{"NSM_LOG_LEVEL", "LOUD"},
		{"NSM_REGISTRY_CLIENT_POLICIES", filepath.Join(dir, "missing", ".*.rego")},
		{"NSM_REGISTRY_CLIENT_POLICIES", filepath.Join(dir, "missing.rego")},
		{"NSM_DIAL_TIMEOUT", "-1s"},
		{"NSM_METRICS_EXPORT_INTERVAL", "soon"},
		{"NSM_PROMETHEUS_LISTEN_ON", "8081"},
		{"NSM_PROMETHEUS_SERVER_HEADER_TIMEOUT", "0"},
		{"NSM_PROMETHEUS_MONITOR_CERTIFICATE", "yes please"},
		{"NSM_PROMETHEUS_MAX_BIND_THRESHOLD", "x"},
		{"NSM_PPROF_ENABLED", "maybe"},
		{"NSM_PPROF_LISTEN_ON", "localhost"},
		{"NSM_TUNNEL_IP", "10.0.0.300"},
		{"NSM_TUNNEL_IP", "0.0.0.0"},
		{"NSM_VXLAN_PORT", "70000"},
		{"NSM_VXLAN_PORT", "-1"},
		{"NSM_VPP_API_SOCKET", notASocket},
		{"NSM_VPP_INIT", "bogus"},
		{"NSM_VPP_INIT_PARAMS", filepath.Join(dir, "missing.yaml")},
		{"NSM_VPP_INIT_PARAMS", badParams},
		{"NSM_VPP_MIN_OPERATION_TIMEOUT", "0ms"},
		{"NSM_DEVICE_SELECTOR_FILE", filepath.Join(dir, "missing.yaml")},
		{"NSM_DEVICE_SELECTOR_FILE", badSelector},
		{"NSM_MECHANISM_PRIORITY", "KERNEL,SRIOV"},
		{"NSM_KERNEL_INTERFACE_TYPE", "macvlan"},
		{"TELEMETRY", "on"},
		{"PROMETHEUS", "enabled"},
		{"NSM_MAX_REQUEST_POLICIES", "0"},
		{"NSM_MAX_REQUEST_ROUTES", "-5"},
		{"NSM_MAX_REQUEST_LABEL_SIZE", "4k"},
		{"NSM_MAX_HELD_DESCRIPTORS_PER_PEER", "0"},
		{"NSM_MAX_HELD_DESCRIPTORS", "-1"},
		{"NSM_MAX_HELD_DESCRIPTORS", "lots"},
		{"NSM_MAX_HELD_DESCRIPTORS_PER_PEER", "5000"}, // above the total's default
	}
	for _, tc := range cases {
		requireRejected(t, tc.variable, tc.value, nil)
	}

	// Values that are only wrong next to others: each case sets also first.
	prometheusCases := []struct {
		variable, value string
		also            map[string]string
	}{
		// A set file that is missing: the sdk would turn TLS on and fail every scrape.
		{"NSM_PROMETHEUS_CERT_FILE", filepath.Join(dir, "missing.crt"), map[string]string{"NSM_PROMETHEUS_KEY_FILE": keyFile}},
		{"NSM_PROMETHEUS_KEY_FILE", filepath.Join(dir, "missing.key"), map[string]string{"NSM_PROMETHEUS_CERT_FILE": certFile}},
		{"NSM_PROMETHEUS_CA_FILE", filepath.Join(filepath.Dir(caFile), "missing.crt"), tlsPair},
		{"NSM_PROMETHEUS_CERT_FILE", dir, map[string]string{"NSM_PROMETHEUS_KEY_FILE": keyFile}},
		// Half a TLS configuration: the sdk would silently serve plain HTTP.
		{"NSM_PROMETHEUS_CERT_FILE", certFile, nil},
		{"NSM_PROMETHEUS_KEY_FILE", keyFile, nil},
		{"NSM_PROMETHEUS_CA_FILE", caFile, nil},
		// A CA outside /run/secrets/: the sdk refuses it at run time and rejects every scraper.
		{"NSM_PROMETHEUS_CA_FILE", outsideSecrets, tlsPair},
	}
	for _, tc := range prometheusCases {
		requireRejected(t, tc.variable, tc.value, tc.also)
	}
}

// requireRejected sets variable=value (after also) and requires config.Load to refuse it in one
// line naming the variable and the value.
func requireRejected(t *testing.T, variable, value string, also map[string]string) {
	t.Run(variable+"="+value, func(t *testing.T) {
		clearEnv(t)
		for name, other := range also {
			t.Setenv(name, other)
		}
		t.Setenv(variable, value)
		cfg, err := config.Load()
		require.Error(t, err)
		require.Nil(t, cfg)
		message := err.Error()
		require.NotContains(t, message, "\n")
		require.Contains(t, message, variable)
		require.Contains(t, message, value)
		require.NotContains(t, message, "envconfig", "the library's phrasing must not leak through")
	})
}

func TestUsageListsEveryVariableWithDefaultAndDescription(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, config.PrintUsage(&out))
	lines := strings.Split(out.String(), "\n")
	variables := config.Variables()
	require.Len(t, variables, reflect.TypeOf(config.Config{}).NumField()-4+reflect.TypeOf(config.RequestLimits{}).NumField(),
		"every field but the three loaded ones and the embedded request limits is a variable, and so is every request limit")
	for _, variable := range variables {
		block := usageBlock(lines, variable)
		require.NotEmpty(t, block, "%s missing from usage", variable)
		require.GreaterOrEqual(t, len(strings.Fields(block[0])), 2, "%s needs a type: %q", variable, block[0])
		text := strings.Join(block, "\n")
		require.Regexp(t, `(, |\n    )default \S`, text, "%s needs its default", variable)
		last := block[len(block)-1]
		require.True(t, strings.HasPrefix(last, "    ") && !strings.HasPrefix(last, "    default "),
			"%s needs a description: %q", variable, text)
	}
	require.Contains(t, out.String(), "\nNSM_DIAL_TIMEOUT  Duration, default 750ms\n    Timeout for dialing the next hop\n")
}

func TestUsageFitsATerminalAndNamesWhatTheSDKReads(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, config.PrintUsage(&out))
	for _, line := range strings.Split(out.String(), "\n") {
		require.LessOrEqual(t, len(line), config.UsageWidth, "too wide: %q", line)
		require.NotContains(t, line, "\t", "tabs make the width depend on the terminal: %q", line)
	}
	lines := strings.Split(out.String(), "\n")
	for _, variable := range []string{svid.EndpointSocketEnv, "TELEMETRY", "PROMETHEUS"} {
		block := usageBlock(lines, variable)
		require.NotEmpty(t, block, "%s missing from usage", variable)
		require.Greater(t, len(block), 1, "%s needs a description", variable)
	}
	// The longest description, wrapped between words and all of it there.
	stateDir := strings.Join(usageBlock(lines, "NSM_STATE_DIR")[1:], " ")
	require.Contains(t, strings.Join(strings.Fields(stateDir), " "),
		"each forwarder keeps its connection journal in the subdirectory named NSM_NAME, locked while it runs")
}

// usageBlock is variable's entry in the usage: its own line and the indented lines under it.
func usageBlock(lines []string, variable string) []string {
	for i, line := range lines {
		if line != variable && !strings.HasPrefix(line, variable+" ") {
			continue
		}
		block := []string{line}
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(next, "    ") {
				break
			}
			block = append(block, next)
		}
		return block
	}
	return nil
}

// prometheusFiles writes a certificate, a key and a CA file (their content is the sdk's business,
// read when the server starts) and lets the CA directory pass for /run/secrets/.
func prometheusFiles(t *testing.T) (certFile, keyFile, caFile string) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets") + "/"
	require.NoError(t, os.Mkdir(secrets, 0o700))
	t.Cleanup(config.SetPrometheusCAPrefix(secrets))
	certFile, keyFile, caFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(secrets, "ca.crt")
	for _, file := range []string{certFile, keyFile, caFile} {
		require.NoError(t, os.WriteFile(file, []byte("PEM"), 0o600))
	}
	return certFile, keyFile, caFile
}

func TestSetSRIOVVariablesAreNamedAsIgnored(t *testing.T) {
	clearEnv(t)
	t.Setenv("NSM_SRIOV_CONFIG_FILE", "/var/lib/networkservicemesh/smartnic.config")
	t.Setenv("NSM_VFIO_PATH", "")
	cfg, err := config.Load()
	require.NoError(t, err, "a stock manifest's SR-IOV variables do not stop start-up")
	require.Equal(t, []string{"NSM_SRIOV_CONFIG_FILE", "NSM_VFIO_PATH"}, cfg.IgnoredSRIOV,
		"every SR-IOV variable that is set, even empty, in SRIOVVariables' order, and no other")

	clearEnv(t)
	cfg, err = config.Load()
	require.NoError(t, err)
	require.Empty(t, cfg.IgnoredSRIOV)
}

func TestSRIOVVariablesAreTheStockOnesThisForwarderDoesNotRead(t *testing.T) {
	require.Len(t, config.SRIOVVariables, 8)
	for _, variable := range config.Variables() {
		require.NotContains(t, config.SRIOVVariables, variable)
	}
}
