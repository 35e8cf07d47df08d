package config

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/kelseyhightower/envconfig"
)

// UsageWidth is the widest line PrintUsage writes: a terminal's, wider than any variable's name.
const UsageWidth = 100

// SDKVariables are read by the NSM sdk and go-spiffe, as in every NSM component, not by Load;
// the usage names them all the same, since a forwarder without SPIFFE_ENDPOINT_SOCKET never
// starts.
var SDKVariables = []struct{ Name, Description string }{
	{"SPIFFE_ENDPOINT_SOCKET", "SPIFFE workload API (the spire agent's socket), e.g. " +
		"unix:///run/spire/sockets/agent.sock. Required: start-up waits up to a minute for the " +
		"first SVID, then fails saying so"},
	{"TELEMETRY", "true exports OpenTelemetry traces and metrics to NSM_OPEN_TELEMETRY_ENDPOINT"},
	{"PROMETHEUS", "true (with TELEMETRY=true) serves the metrics on NSM_PROMETHEUS_LISTEN_ON instead of " +
		"exporting them over OTLP"},
}

// PrintUsage writes every variable with its type, default and description, wrapped to
// UsageWidth, then the variables the sdk reads.
func PrintUsage(out io.Writer) error {
	// envconfig knows the types and defaults; one tab-separated line per variable, laid out below.
	var table bytes.Buffer
	const row = "{{range .}}{{usage_key .}}\t{{usage_type .}}\t{{usage_default .}}\t{{usage_description .}}\n{{end}}"
	if err := envconfig.Usagef(Prefix, &Config{}, &table, row); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("forwarder-vpp: a Network Service Mesh forwarder that drives VPP.\n" +
		"It is configured through these environment variables (stock cmd-forwarder-vpp's, minus SR-IOV):\n\n")
	for _, line := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		fields := strings.SplitN(line, "\t", 4)
		if len(fields) != 4 {
			return fmt.Errorf("unexpected usage line %q", line)
		}
		name, kind, def, description := fields[0], fields[1], fields[2], fields[3]
		if def == "" {
			def = "(unset)"
		}
		head := fmt.Sprintf("%s  %s, default %s", name, kind, def)
		if len(head) > UsageWidth {
			// A long default (NSM_REGISTRY_CLIENT_POLICIES) gets a line of its own.
			head = fmt.Sprintf("%s  %s\n%sdefault %s", name, kind, usageIndent, def)
		}
		b.WriteString(head + "\n")
		b.WriteString(Wrap(description))
	}
	b.WriteString("\nRead by the NSM sdk and go-spiffe, as in every NSM component:\n")
	b.WriteString("\n")
	for _, v := range SDKVariables {
		fmt.Fprintf(&b, "%s\n", v.Name)
		b.WriteString(Wrap(v.Description))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// usageIndent starts every description line.
const usageIndent = "    "

// Wrap indents text under a usage entry, broken between words so that no line is wider than
// UsageWidth.
func Wrap(text string) string {
	var b strings.Builder
	line := usageIndent
	for _, word := range strings.Fields(text) {
		if line != usageIndent && len(line)+1+len(word) > UsageWidth {
			b.WriteString(line + "\n")
			line = usageIndent
		}
		if line != usageIndent {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}
