package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
)

func TestHelpFitsATerminalAndNamesTheSPIFFESocket(t *testing.T) {
	var out bytes.Buffer
	flags := flag.NewFlagSet("forwarder-vpp", flag.ContinueOnError)
	defineFlags(flags, &out)
	require.ErrorIs(t, flags.Parse([]string{"-h"}), flag.ErrHelp)

	help := out.String()
	for _, line := range strings.Split(help, "\n") {
		require.LessOrEqual(t, len(line), config.UsageWidth, "too wide: %q", line)
		require.NotContains(t, line, "\t", "a tab's width is the terminal's: %q", line)
	}
	require.Contains(t, help, "\nSPIFFE_ENDPOINT_SOCKET\n")
	require.Contains(t, help, "\n  -liveness URL\n")
	require.Contains(t, help, "\n  inspect [-json]\n")
	for _, variable := range config.Variables() {
		require.Contains(t, help, "\n"+variable+"  ", "%s missing", variable)
	}
}
