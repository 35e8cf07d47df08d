package dataplane

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
)

// NamespacePath turns what VPP accepts as a host namespace (a name under /var/run/netns
// or an absolute path such as /proc/PID/ns/net) into a path.
func NamespacePath(ns string) string {
	if ns == "" || filepath.IsAbs(ns) {
		return ns
	}
	return filepath.Join("/var/run/netns", ns)
}

// inNetns runs fn on an OS thread switched into the namespace at path ("" means the
// process's own). The thread is never unlocked, so it is discarded when fn returns and no
// other goroutine can inherit the switched namespace.
func inNetns(path string, fn func() error) error {
	errCh := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if path != "" {
			target, err := netns.GetFromPath(path)
			if err != nil {
				errCh <- fmt.Errorf("opening network namespace %s: %w", path, err)
				return
			}
			defer func() { _ = target.Close() }()
			if err := netns.Set(target); err != nil {
				errCh <- fmt.Errorf("entering network namespace %s: %w", path, err)
				return
			}
		}
		errCh <- fn()
	}()
	return <-errCh
}
