package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/networkservicemesh/sdk/pkg/tools/opa"

	ipsecapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	kernelapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	memifapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	vlanapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	vxlanapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	wireguardapi "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/devicecfg"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

// KnownMechanisms are the mechanism types this forwarder implements (the stock set minus SR-IOV).
var KnownMechanisms = []string{
	kernelapi.MECHANISM, vxlanapi.MECHANISM, wireguardapi.MECHANISM,
	ipsecapi.MECHANISM, memifapi.MECHANISM, vlanapi.MECHANISM,
}

// validate checks what envconfig's type conversion cannot, and loads the files the variables
// name, so that a bad file stops start-up instead of surfacing halfway through it.
func (c *Config) validate() error {
	checks := []func() error{
		func() error { return requireText("NSM_NAME", c.Name) },
		func() error { return requireText("NSM_NSNAME", c.NSName) },
		func() error { return checkGRPCURL("NSM_CONNECT_TO", &c.ConnectTo) },
		func() error { return checkGRPCURL("NSM_LISTEN_ON", &c.ListenOn) },
		func() error { return checkPositive("NSM_MAX_TOKEN_LIFETIME", c.MaxTokenLifetime) },
		func() error { return checkPositive("NSM_DIAL_TIMEOUT", c.DialTimeout) },
		func() error { return checkPositive("NSM_METRICS_EXPORT_INTERVAL", c.MetricsExportInterval) },
		func() error {
			return checkPositive("NSM_PROMETHEUS_SERVER_HEADER_TIMEOUT", c.PrometheusServerHeaderTimeout)
		},
		func() error { return checkPositive("NSM_PROMETHEUS_MAX_BIND_THRESHOLD", c.PrometheusMaxBindThreshold) },
		func() error { return checkPositive("NSM_VPP_MIN_OPERATION_TIMEOUT", c.VPPMinOperationTimeout) },
		func() error { return checkHostPort("NSM_PROMETHEUS_LISTEN_ON", c.PrometheusListenOn) },
		func() error { return checkHostPort("NSM_PPROF_LISTEN_ON", c.PprofListenOn) },
		func() error { return checkSwitch("TELEMETRY") },
		func() error { return checkSwitch("PROMETHEUS") },
		c.checkLogLevel,
		c.checkPrometheusFiles,
		c.checkRegistryClientPolicies,
		c.checkTunnelIP,
		c.checkVppAPISocket,
		c.normalizeMechanismPriority,
		c.loadInitParams,
		c.loadDeviceSelector,
		c.checkRequestLimits,
		c.checkDescriptorLimits,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func requireText(variable, value string) error {
	if strings.TrimSpace(value) == "" {
		return &ValueError{Variable: variable, Value: value, Reason: "must not be empty"}
	}
	return nil
}

// checkGRPCURL accepts what the NSM sdk can dial or listen on: unix sockets and tcp addresses.
func checkGRPCURL(variable string, u *url.URL) error {
	switch u.Scheme {
	case "unix":
		if u.Path == "" {
			return &ValueError{Variable: variable, Value: rawValue(variable, u.String()), Reason: "a unix URL needs a socket path (unix:///path/to.sock)"}
		}
	case "tcp":
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return &ValueError{Variable: variable, Value: rawValue(variable, u.String()), Reason: "a tcp URL needs host:port (tcp://10.0.0.1:5001)"}
		}
	default:
		return &ValueError{Variable: variable, Value: rawValue(variable, u.String()), Reason: "scheme must be unix or tcp"}
	}
	return nil
}

func checkPositive(variable string, d time.Duration) error {
	if d <= 0 {
		return &ValueError{Variable: variable, Value: rawValue(variable, d.String()), Reason: "must be a positive duration"}
	}
	return nil
}

func checkHostPort(variable, value string) error {
	if _, _, err := net.SplitHostPort(value); err != nil {
		return &ValueError{Variable: variable, Value: value, Reason: "must be host:port or :port"}
	}
	return nil
}

// checkSwitch rejects a value the sdk would silently read as false.
func checkSwitch(variable string) error {
	raw, set := os.LookupEnv(variable)
	if _, err := strconv.ParseBool(raw); set && raw != "" && err != nil {
		return &ValueError{Variable: variable, Value: raw, Reason: "must be true or false"}
	}
	return nil
}

func (c *Config) checkLogLevel() error {
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		return &ValueError{Variable: "NSM_LOG_LEVEL", Value: c.LogLevel, Reason: "must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC"}
	}
	return nil
}

// checkRegistryClientPolicies loads the policies once: the sdk panics on a path it cannot read,
// and a policy that does not compile would otherwise surface at the first registration.
func (c *Config) checkRegistryClientPolicies() error {
	policies, err := opa.PoliciesByFileMask(c.RegistryClientPolicies...)
	if err == nil && len(policies) == 0 && len(c.RegistryClientPolicies) > 0 {
		err = fmt.Errorf("no policy file matches")
	}
	if err != nil {
		return &ValueError{
			Variable: "NSM_REGISTRY_CLIENT_POLICIES",
			Value:    strings.Join(c.RegistryClientPolicies, ","),
			Reason:   oneLine(err.Error()),
		}
	}
	return nil
}

func (c *Config) checkTunnelIP() error {
	if c.TunnelIP != nil && (c.TunnelIP.IsUnspecified() || c.TunnelIP.IsMulticast()) {
		return &ValueError{Variable: "NSM_TUNNEL_IP", Value: rawValue("NSM_TUNNEL_IP", c.TunnelIP.String()), Reason: "must be a unicast address of this node"}
	}
	return nil
}

func (c *Config) checkVppAPISocket() error {
	if info, err := os.Stat(c.VppAPISocket); err == nil && info.Mode()&os.ModeSocket == 0 {
		return &ValueError{Variable: "NSM_VPP_API_SOCKET", Value: c.VppAPISocket, Reason: "exists but is not a socket"}
	}
	return nil
}

// normalizeMechanismPriority accepts mechanism names in any case and stores them as the NSM API
// spells them, so that the priority element matches them.
func (c *Config) normalizeMechanismPriority() error {
	normalized := make([]string, 0, len(c.MechanismPriority))
	for _, name := range c.MechanismPriority {
		canonical := strings.ToUpper(strings.TrimSpace(name))
		if canonical == "" {
			continue
		}
		if !slices.Contains(KnownMechanisms, canonical) {
			return &ValueError{
				Variable: "NSM_MECHANISM_PRIORITY",
				Value:    strings.Join(c.MechanismPriority, ","),
				Reason:   fmt.Sprintf("unknown mechanism %q (known: %s)", name, strings.Join(KnownMechanisms, ", ")),
			}
		}
		normalized = append(normalized, canonical)
	}
	c.MechanismPriority = normalized
	return nil
}

func (c *Config) loadInitParams() error {
	c.InitParams = vppinit.DefaultParams()
	if c.VppInitParams == "" {
		return nil
	}
	params, err := vppinit.ReadParams(c.VppInitParams)
	if err != nil {
		return &ValueError{Variable: "NSM_VPP_INIT_PARAMS", Value: c.VppInitParams, Reason: oneLine(err.Error())}
	}
	c.InitParams = params
	return nil
}

func (c *Config) loadDeviceSelector() error {
	c.VlanDomainToDevice = map[string]string{}
	if c.DeviceSelectorFile == "" {
		return nil
	}
	viaToDevice, err := devicecfg.ReadFile(c.DeviceSelectorFile)
	if err != nil {
		return &ValueError{Variable: "NSM_DEVICE_SELECTOR_FILE", Value: c.DeviceSelectorFile, Reason: oneLine(err.Error())}
	}
	c.VlanDomainToDevice = viaToDevice
	return nil
}

// rawValue is the variable as the operator wrote it, or parsed when the default was used: an
// error should quote what the operator typed.
func rawValue(variable, parsed string) string {
	if raw, ok := os.LookupEnv(variable); ok {
		return raw
	}
	return parsed
}
