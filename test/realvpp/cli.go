package realvpp

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Vppctl is the vppctl shipped beside the vpp binary.
func Vppctl(binary string) string { return filepath.Join(filepath.Dir(binary), "vppctl") }

// CLI runs a debug CLI command through the VPP's CLI socket, as `vppctl` in a VPP pod does, and
// returns what VPP printed, with Unix line ends. Commands that wait for VPP events (ping) must
// come this way, never through the binary API's cli_inband: there they run inside VPP's API
// process and take its events, so a client's API message that arrives meanwhile is dropped and
// never answered.
func CLI(ctx context.Context, vppctl string, l Layout, command string) (string, error) {
	args := append([]string{"-s", l.CLISocket()}, strings.Fields(command)...)
	out, err := exec.CommandContext(ctx, vppctl, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("vppctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n"), nil
}
