package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// podConfigDir is where the stock nsmgr pod mounts its config volume, which the
// cmd-exclude-prefixes-k8s sidecar fills, and where sdk's excludedprefixes server of the nsmgr
// chain reads excluded_prefixes.yaml: its path is fixed, not an option of the chain.
const podConfigDir = "/var/lib/networkservicemesh/config"

// ownMountNamespaceVariable marks the nsmgr re-executed in a mount namespace of its own.
const ownMountNamespaceVariable = "E2E_NSMGR_OWN_MOUNT_NAMESPACE"

// runWithConfigDir runs the nsmgr with dir bound over podConfigDir, as the pod's volume is, so
// that each nsmgr of a harness reads its own excluded prefixes. A mount namespace is a property
// of a thread, and a Go program has several from the start, so the nsmgr runs again as a child
// in a new private mount namespace (Go's exec makes it private, so no mount reaches the host);
// this process passes it SIGTERM and SIGINT and exits as it does, and the child dies with it.
// It returns false in that child, which goes on to serve.
func runWithConfigDir(dir string) (exited bool, code int, err error) {
	if os.Getenv(ownMountNamespaceVariable) != "" {
		return false, 0, bindConfigDir(dir)
	}
	executable, err := os.Executable()
	if err != nil {
		return true, 1, err
	}
	// Pdeathsig follows the thread that started the child.
	runtime.LockOSThread()
	child := exec.Command(executable, os.Args[1:]...)
	child.Env = append(os.Environ(), ownMountNamespaceVariable+"=1")
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	if err = child.Start(); err != nil {
		return true, 1, fmt.Errorf("NSM_CONFIG_DIR=%s: starting in a mount namespace of its own: %w", dir, err)
	}
	go func() {
		for s := range signals {
			_ = child.Process.Signal(s)
		}
	}()
	err = child.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return true, exitErr.ExitCode(), nil
	}
	if err != nil {
		return true, 1, err
	}
	return true, 0, nil
}

func bindConfigDir(dir string) error {
	if err := os.MkdirAll(podConfigDir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(dir, podConfigDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("NSM_CONFIG_DIR=%s: bind over %s: %w", dir, podConfigDir, err)
	}
	return nil
}
