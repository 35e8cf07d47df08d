package restore

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pkg/errors"
)

// namespaceDirs hold named network namespaces (ip netns); processes' namespaces are under /proc.
var namespaceDirs = []string{"/var/run/netns", "/run/netns"}

// resolveNetNS turns a recorded netns URL into a file:// URL that opens the same namespace now.
// A client passes its namespace as inode://<dev>/<ino> with the file descriptor beside the
// request; that descriptor died with the previous run, so the namespace is looked up by its inode
// among the named namespaces and those of live processes (the forwarder shares the host's PID
// namespace). found is false when no such namespace exists any more.
func resolveNetNS(recorded string) (fileURL string, found bool, err error) {
	u, err := url.Parse(recorded)
	if err != nil {
		return "", false, errors.Wrapf(err, "recorded netns URL %q", recorded)
	}
	switch u.Scheme {
	case "file":
		if _, err := os.Stat(u.Path); err != nil {
			return "", false, nil
		}
		return recorded, true, nil
	case "inode":
		dev, devErr := strconv.ParseUint(u.Host, 10, 64)
		ino, inoErr := strconv.ParseUint(strings.TrimPrefix(u.Path, "/"), 10, 64)
		if devErr != nil || inoErr != nil {
			return "", false, errors.Errorf("recorded netns URL %q is not inode://<dev>/<ino>", recorded)
		}
		if path, ok := findNamespace(dev, ino); ok {
			return (&url.URL{Scheme: "file", Path: path}).String(), true, nil
		}
		return "", false, nil
	default:
		return "", false, errors.Errorf("recorded netns URL %q has neither a file nor an inode scheme", recorded)
	}
}

func findNamespace(dev, ino uint64) (string, bool) {
	var candidates []string
	for _, dir := range namespaceDirs {
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		candidates = append(candidates, names...)
	}
	processes, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	candidates = append(candidates, processes...)
	for _, path := range candidates {
		var stat syscall.Stat_t
		if syscall.Stat(path, &stat) == nil && uint64(stat.Dev) == dev && stat.Ino == ino {
			return path, true
		}
	}
	return "", false
}
