package realvpp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MisclockingStall is how long MisclockingBinary holds VPP up at its clock estimate: VPP's clock
// then runs tens of times fast (42 to 111 in the runs of 2 Dec 2026). With 300 ms it ran thousands
// of times fast, and on the machine of 2 Dec 2026 none of 13 such launches told its time: each
// answered no `show clock` within 5 s, or no client at all within 30 s.
// TestRealVPPThatMisreadItsClockFailsStartUp, which needs a misclocked VPP that still tells its
// time, failed a clean-clone `make test` for want of one.
const MisclockingStall = 50_000 // µs

// MisclockingBinary returns a vpp whose first launches misread their clock as on a loaded
// machine: strace delays the return of VPP's first clock_gettime, the one that starts its
// one-millisecond TSC estimate, and VPP ends when strace does. Later launches run binary as it
// is. It skips the test when strace is missing (scripts/install-tools.sh installs it).
func MisclockingBinary(t *testing.T, binary string, launches int) string {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		skip(t, "strace is not installed (scripts/install-tools.sh installs it): it stalls VPP's clock estimate")
	}
	// strace's tracee outlives a SIGKILLed strace, and a misclocked VPP ignores SIGTERM: whoever
	// kills the launched process, as vpphelper does, must end VPP with it.
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		skip(t, "setpriv (util-linux) is not installed: it ends a stalled VPP with its strace")
	}
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
count=%[1]q
launched=$(cat "$count" 2>/dev/null || echo 0)
echo $((launched + 1)) >"$count"
if [ "$launched" -lt %[2]d ]; then
	exec %[3]q -f -qq -o /dev/null -e trace=clock_gettime -e inject=clock_gettime:delay_exit=%[4]d:when=1 %[6]q --pdeathsig KILL -- %[5]q "$@"
fi
exec %[5]q "$@"
`, filepath.Join(dir, "launched"), launches, strace, MisclockingStall, binary, setpriv)
	path := filepath.Join(dir, "vpp")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
