package config

import (
	"os"
	"path/filepath"
	"strings"
)

// prometheusCAPrefix is where the sdk's Prometheus server accepts a CA file from; any other path
// it refuses at run time, after which no scraper can connect. A variable only so that tests can
// point it at a directory of their own.
var prometheusCAPrefix = "/run/secrets/"

// checkPrometheusFiles holds the Prometheus TLS files to what the sdk's server does with them.
// Unset (the stock default), the server speaks plain HTTP. The sdk turns TLS on when the
// certificate and key are both set, and only logs it when they cannot be read, leaving a server
// that fails every handshake: so a set file must exist, and a half-configured set is refused.
func (c *Config) checkPrometheusFiles() error {
	files := []struct{ variable, path string }{
		{"NSM_PROMETHEUS_CERT_FILE", c.PrometheusCertFile},
		{"NSM_PROMETHEUS_KEY_FILE", c.PrometheusKeyFile},
		{"NSM_PROMETHEUS_CA_FILE", c.PrometheusCAFile},
	}
	for _, file := range files {
		if file.path == "" {
			continue
		}
		if info, err := os.Stat(file.path); err != nil {
			return &ValueError{Variable: file.variable, Value: file.path, Reason: oneLine(err.Error())}
		} else if info.IsDir() {
			return &ValueError{Variable: file.variable, Value: file.path, Reason: "is a directory, not a file"}
		}
	}
	if (c.PrometheusCertFile == "") != (c.PrometheusKeyFile == "") {
		set := files[0]
		if set.path == "" {
			set = files[1]
		}
		return &ValueError{Variable: set.variable, Value: set.path,
			Reason: "TLS needs both NSM_PROMETHEUS_CERT_FILE and NSM_PROMETHEUS_KEY_FILE; set both, or neither for plain HTTP"}
	}
	if c.PrometheusCAFile == "" {
		return nil
	}
	if c.PrometheusCertFile == "" {
		return &ValueError{Variable: "NSM_PROMETHEUS_CA_FILE", Value: c.PrometheusCAFile,
			Reason: "client certificates are only checked over TLS: set NSM_PROMETHEUS_CERT_FILE and NSM_PROMETHEUS_KEY_FILE too"}
	}
	if !strings.HasPrefix(filepath.Clean(c.PrometheusCAFile), prometheusCAPrefix) {
		return &ValueError{Variable: "NSM_PROMETHEUS_CA_FILE", Value: c.PrometheusCAFile,
			Reason: "the Prometheus server only reads a CA file under " + prometheusCAPrefix}
	}
	return nil
}
