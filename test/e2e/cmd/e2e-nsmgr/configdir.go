package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// podConfigDir is where the stock nsmgr pod mounts its config volume, which the
// cmd-exclude-prefixes-k8s sidecar fills, and where sdk's excludedprefixes server of the nsmgr
// chain reads excluded_prefixes.yaml: its path is fixed, not an option of the chain.
const podConfigDir = "/var/lib/networkservicemesh/config"

// mountConfigDir binds dir over podConfigDir for this process only, as the pod's volume is, so
// that each nsmgr of a harness reads its own excluded prefixes. It refuses to run in the host's
// mount namespace, where the bind would reach every process: `ip netns exec`, which starts the
// harness's nsmgrs, gives each a mount namespace of its own whose mounts do not propagate back.
func mountConfigDir(dir string) error {
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	host, err := os.Readlink("/proc/1/ns/mnt")
	if err != nil {
		return err
	}
	if own == host {
		return fmt.Errorf("NSM_CONFIG_DIR=%s: binding it over %s needs a mount namespace of its own (run under ip netns exec)", dir, podConfigDir)
	}
	if err = os.MkdirAll(podConfigDir, 0o755); err != nil {
		return err
	}
	if err = unix.Mount(dir, podConfigDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("NSM_CONFIG_DIR=%s: bind over %s: %w", dir, podConfigDir, err)
	}
	return nil
}
