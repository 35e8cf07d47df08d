package config

// SetPrometheusCAPrefix lets the tests accept CA files from a temporary directory.
func SetPrometheusCAPrefix(prefix string) (restore func()) {
	previous := prometheusCAPrefix
	prometheusCAPrefix = prefix
	return func() { prometheusCAPrefix = previous }
}
