package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// Prefix is the environment prefix of every variable.
const Prefix = "nsm"

// Config is the forwarder's configuration. Field names, defaults and descriptions follow the stock
// forwarder so that existing deployments keep working.
type Config struct {
	Name                   string            `default:"forwarder" desc:"Name of the forwarder endpoint"`
	Labels                 map[string]string `default:"p2p:true" desc:"Labels of the forwarder endpoint (key:value,key:value)"`
	NSName                 string            `default:"forwarder" desc:"Name of the Network Service to register with the registry"`
	ConnectTo              url.URL           `default:"unix:///connect.to.socket" desc:"URL of the nsmgr to register with and connect through" split_words:"true"`
	ListenOn               url.URL           `default:"unix:///listen.on.socket" desc:"URL to serve the NSM API on" split_words:"true"`
	MaxTokenLifetime       time.Duration     `default:"10m" desc:"Maximum lifetime of the tokens this forwarder signs" split_words:"true"`
	RegistryClientPolicies []string          `default:"etc/nsm/opa/common/.*.rego,etc/nsm/opa/registry/.*.rego,etc/nsm/opa/client/.*.rego" desc:"Paths to files and directories with the registry client OPA policies" split_words:"true"`
	LogLevel               string            `default:"INFO" desc:"Log level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC)" split_words:"true"`
	DialTimeout            time.Duration     `default:"750ms" desc:"Timeout for dialing the next hop" split_words:"true"`

	OpenTelemetryEndpoint         string        `default:"otel-collector.observability.svc.cluster.local:4317" desc:"OpenTelemetry collector endpoint (used when TELEMETRY=true)" split_words:"true"`
	MetricsExportInterval         time.Duration `default:"10s" desc:"Interval between metrics exports" split_words:"true"`
	PrometheusListenOn            string        `default:":8081" desc:"Address of the Prometheus metrics server (used when PROMETHEUS=true)" split_words:"true"`
	PrometheusServerHeaderTimeout time.Duration `default:"5s" desc:"How long the Prometheus server waits for request headers" split_words:"true"`
	PrometheusMonitorCertificate  bool          `default:"false" desc:"Reload the Prometheus server certificate when its files change" split_words:"true"`
	PrometheusCertFile            string        `default:"" desc:"Certificate file of the Prometheus server; set with the key file, the server speaks TLS (unset: plain HTTP)" split_words:"true"`
	PrometheusKeyFile             string        `default:"" desc:"Key file of the Prometheus server (with the certificate file)" split_words:"true"`
	PrometheusCAFile              string        `default:"" desc:"CA file under /run/secrets/ to verify Prometheus scrapers' certificates (mTLS; needs the certificate and key files)" split_words:"true"`
	PrometheusMaxBindThreshold    time.Duration `default:"120s" desc:"How long the Prometheus server retries to bind its address" split_words:"true"`
	PprofEnabled                  bool          `default:"false" desc:"Serve pprof profiles" split_words:"true"`
	PprofListenOn                 string        `default:"localhost:6060" desc:"Address of the pprof server" split_words:"true"`

	TunnelIP               net.IP        `desc:"IP of this node for vxlan, wireguard and ipsec tunnels; derived from the uplink when unset" split_words:"true"`
	VxlanPort              uint16        `default:"0" desc:"UDP port of vxlan tunnels (0 means 4789)" split_words:"true"`
	VppAPISocket           string        `default:"/var/run/vpp/external/vpp-api.sock" desc:"API socket of an existing VPP; when it does not exist, the forwarder starts its own VPP" split_words:"true"`
	VppInit                vppinit.Mode  `default:"AF_PACKET" desc:"How the uplink is handed to VPP: AF_PACKET, AF_XDP or NONE (forced to NONE with an external VPP)" split_words:"true"`
	VppInitParams          string        `default:"" desc:"YAML file with the af_packet/af_xdp creation parameters of the uplink" split_words:"true"`
	VPPMinOperationTimeout time.Duration `default:"2s" desc:"Minimum timeout of every VPP API call" split_words:"true"`
	DeviceSelectorFile     string        `default:"" desc:"YAML file mapping vlan via labels to host devices" split_words:"true"`
	MechanismPriority      []string      `default:"" desc:"Mechanisms to prefer toward the next hop, in order (KERNEL, VXLAN, WIREGUARD, IPSEC, MEMIF, VLAN)" split_words:"true"`
	KernelInterfaceType    kernelif.Kind `default:"auto" desc:"Kernel interface: auto (tap when /dev/vhost-net exists, else veth), tap or veth" split_words:"true"`
	StateDir               string        `default:"/var/lib/networkservicemesh/forwarder-vpp" desc:"Directory of the forwarder's crash-safe state: each forwarder keeps its connection journal in the subdirectory named NSM_NAME, locked while it runs, and takes over the journals of replaced pods (same NSM_NSNAME and VPP socket) whose lock is free" split_words:"true"`

	MaxHeldDescriptorsPerPeer int `default:"1024" desc:"Most file descriptors (pods' namespaces) the forwarder holds for one peer (a SPIFFE ID) between their arrival and the call that claims them; more are closed at once and that call fails" split_words:"true"`
	MaxHeldDescriptors        int `default:"4096" desc:"Most file descriptors the forwarder holds for all peers together (see NSM_MAX_HELD_DESCRIPTORS_PER_PEER)" split_words:"true"`

	RequestLimits

	// InitParams is NSM_VPP_INIT_PARAMS loaded (or the defaults when unset).
	InitParams vppinit.Params `ignored:"true"`
	// VlanDomainToDevice is NSM_DEVICE_SELECTOR_FILE loaded (empty when unset).
	VlanDomainToDevice map[string]string `ignored:"true"`
	// IgnoredSRIOV are the stock forwarder's SR-IOV variables that are set (SRIOVVariables):
	// start-up warns of each, since nothing here reads them.
	IgnoredSRIOV []string `ignored:"true"`
}

// SRIOVVariables configure the stock forwarder's SR-IOV support (cmd-forwarder-vpp v1.18), which
// this forwarder does not have. A stock manifest may still set them.
var SRIOVVariables = []string{
	"NSM_SRIOV_CONFIG_FILE", "NSM_PCI_DEVICES_PATH", "NSM_PCI_DRIVERS_PATH", "NSM_CGROUP_PATH",
	"NSM_VFIO_PATH", "NSM_RESOURCE_POLL_TIMEOUT", "NSM_DEVICE_PLUGIN_PATH", "NSM_POD_RESOURCES_PATH",
}

// Load reads the configuration from the environment and checks every value.
func Load() (*Config, error) {
	cfg := &Config{}
	if err := envconfig.Process(Prefix, cfg); err != nil {
		return nil, rewrite(err)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for _, variable := range SRIOVVariables {
		if _, set := os.LookupEnv(variable); set {
			cfg.IgnoredSRIOV = append(cfg.IgnoredSRIOV, variable)
		}
	}
	return cfg, nil
}

// ValueError is a bad configuration value: its message names the variable and the value.
type ValueError struct {
	Variable string
	Value    string
	Reason   string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid %s=%q: %s", e.Variable, e.Value, e.Reason)
}

// rewrite turns envconfig's multi-part message into a ValueError.
func rewrite(err error) error {
	var parseErr *envconfig.ParseError
	if !errors.As(err, &parseErr) {
		return errors.New(oneLine(err.Error()))
	}
	return &ValueError{Variable: parseErr.KeyName, Value: parseErr.Value, Reason: oneLine(parseErr.Err.Error())}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Variables returns the name of every variable, in declaration order.
func Variables() []string {
	var names []string
	for _, field := range variableFields() {
		names = append(names, variableName(field))
	}
	return names
}

// variableFields are the fields that are variables, those of embedded structs included.
func variableFields() []reflect.StructField {
	var fields []reflect.StructField
	for _, field := range reflect.VisibleFields(reflect.TypeOf(Config{})) {
		if field.Anonymous || field.Tag.Get("ignored") == "true" {
			continue
		}
		fields = append(fields, field)
	}
	return fields
}

// variableName spells a field's variable as envconfig does with split_words.
func variableName(field reflect.StructField) string {
	name := field.Name
	if field.Tag.Get("split_words") == "true" {
		var words []string
		for _, word := range gatherWords.FindAllString(name, -1) {
			if parts := acronymWord.FindStringSubmatch(word); parts != nil {
				words = append(words, parts[1], parts[2])
				continue
			}
			words = append(words, word)
		}
		name = strings.Join(words, "_")
	}
	return strings.ToUpper(Prefix + "_" + name)
}

// gatherWords and acronymWord split words as envconfig does: VPPMinOperationTimeout gathers
// VPPMin, Operation, Timeout, and the acronym VPP is then split from Min.
var (
	gatherWords = regexp.MustCompile("([^A-Z]+|[A-Z]+[^A-Z]+|[A-Z]+)")
	acronymWord = regexp.MustCompile("([A-Z]+)([A-Z][^A-Z]+)")
)

// String lists every variable with its value, for the start-up log.
func (c *Config) String() string {
	value := reflect.ValueOf(c).Elem()
	var pairs []string
	for _, field := range variableFields() {
		fieldValue := value.FieldByIndex(field.Index).Interface()
		if u, ok := fieldValue.(url.URL); ok {
			fieldValue = u.String()
		}
		pairs = append(pairs, fmt.Sprintf("%s=%v", variableName(field), fieldValue))
	}
	return strings.Join(pairs, " ")
}
