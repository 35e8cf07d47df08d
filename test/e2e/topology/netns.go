package topology

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/var/run/netns"

// ip runs an iproute2 command and returns its error with the command's output.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// addNamespace creates a named namespace with its loopback up.
func addNamespace(name string) error {
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	return ip("-n", name, "link", "set", "lo", "up")
}

func deleteNamespace(name string) error {
	if _, err := os.Stat(netnsDir + "/" + name); os.IsNotExist(err) {
		return nil
	}
	return ip("netns", "delete", name)
}

// Namespaces lists the named namespaces whose names start with prefix.
func Namespaces(prefix string) ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// RunPrefix is the namespace prefix of one run of a program: base, then the
// program's pid, so runs never collide and a dead run's leftovers are known.
func RunPrefix(base string) string {
	return fmt.Sprintf("%s-%d-", base, os.Getpid())
}

// SweepStale deletes namespaces named base-<pid>-... whose pid no longer runs:
// what an interrupted earlier run could not clean up.
func SweepStale(base string) error {
	names, err := Namespaces(base + "-")
	if err != nil {
		return err
	}
	for _, name := range names {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(name, base+"-"), "-")
		if !ok {
			continue
		}
		pid, convErr := strconv.Atoi(pidText)
		if convErr != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue
		}
		if err = deleteNamespace(name); err != nil {
			return err
		}
	}
	return nil
}
