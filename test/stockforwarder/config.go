package main

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// config holds the stock command's NSM_* variables with the stock names, defaults and parsing
// (envconfig, prefix "nsm"), minus the SR-IOV ones.
type config struct {
	Name                          string            `default:"forwarder" desc:"Name of Endpoint"`
	Labels                        map[string]string `default:"p2p:true" desc:"Labels related to this forwarder-vpp instance"`
	NSName                        string            `default:"forwarder" desc:"Name of Network Service to Register with Registry"`
	ConnectTo                     url.URL           `default:"unix:///connect.to.socket" desc:"url to connect to" split_words:"true"`
	ListenOn                      url.URL           `default:"unix:///listen.on.socket" desc:"url to listen on" split_words:"true"`
	MaxTokenLifetime              time.Duration     `default:"10m" desc:"maximum lifetime of tokens" split_words:"true"`
	RegistryClientPolicies        []string          `default:"etc/nsm/opa/common/.*.rego,etc/nsm/opa/registry/.*.rego,etc/nsm/opa/client/.*.rego" desc:"paths to files and directories that contain registry client policies" split_words:"true"`
	LogLevel                      string            `default:"INFO" desc:"Log level" split_words:"true"`
	DialTimeout                   time.Duration     `default:"750ms" desc:"Timeout for the dial the next endpoint" split_words:"true"`
	OpenTelemetryEndpoint         string            `default:"otel-collector.observability.svc.cluster.local:4317" desc:"OpenTelemetry Collector Endpoint" split_words:"true"`
	MetricsExportInterval         time.Duration     `default:"10s" desc:"interval between metrics exports" split_words:"true"`
	PprofEnabled                  bool              `default:"false" desc:"is pprof enabled" split_words:"true"`
	PprofListenOn                 string            `default:"localhost:6060" desc:"pprof URL to ListenAndServe" split_words:"true"`
	PrometheusListenOn            string            `default:":8081" desc:"Prometheus URL to ListenAndServe" split_words:"true"`
	PrometheusCAFile              string            `default:"" desc:"CA file of the Prometheus server" split_words:"true"`
	PrometheusKeyFile             string            `default:"" desc:"key file of the Prometheus server" split_words:"true"`
	PrometheusCertFile            string            `default:"" desc:"certificate file of the Prometheus server" split_words:"true"`
	PrometheusMonitorCertificate  bool              `default:"false" desc:"watch the Prometheus certificate for updates" split_words:"true"`
	PrometheusServerHeaderTimeout time.Duration     `default:"5s" desc:"how long the Prometheus server waits for request headers" split_words:"true"`
	PrometheusMaxBindThreshold    time.Duration     `default:"120s" desc:"how long the Prometheus server retries to bind" split_words:"true"`

	TunnelIP               net.IP        `desc:"IP to use for tunnels" split_words:"true"`
	VxlanPort              uint16        `default:"0" desc:"VXLAN port to use" split_words:"true"`
	VppAPISocket           string        `default:"/var/run/vpp/external/vpp-api.sock" desc:"filename of socket to connect to existing VPP instance" split_words:"true"`
	VppInit                vppInit       `default:"AF_PACKET" desc:"type of VPP initialization. Must be AF_XDP, AF_PACKET or NONE" split_words:"true"`
	VppInitParams          string        `desc:"Configuration file path containing VPP API parameters for initialization" split_words:"true"`
	VPPMinOperationTimeout time.Duration `default:"2s" desc:"minimum timeout for every vpp operation" split_words:"true"`
	DeviceSelectorFile     string        `default:"" desc:"config file for device name to label matching" split_words:"true"`
	MechanismPriority      []string      `default:"" desc:"sets priorities for mechanisms" split_words:"true"`
}

func (c *config) process() error {
	if err := envconfig.Usage("nsm", c); err != nil {
		return err
	}
	return envconfig.Process("nsm", c)
}

// vppInit is stock's NSM_VPP_INIT: the same three values, spelled exactly so; anything else
// stops start-up. Stock's AF_XDP falls back to AF_PACKET on kernels before 5.4; both hand the
// uplink to a VPP the forwarder started itself, which this command does not reproduce (see the
// package comment), so only the choice is kept.
type vppInit string

const vppInitNone vppInit = "NONE"

// Decode is envconfig's hook.
func (v *vppInit) Decode(value string) error {
	switch value {
	case "AF_XDP", "AF_PACKET", string(vppInitNone):
		*v = vppInit(value)
		return nil
	}
	return fmt.Errorf("%s invalid value for VPP init function", value)
}
