package netnsid

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
)

// Identity names one network namespace for the life of the kernel.
type Identity struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Cookie uint64 `json:"cookie"`
	Boot   string `json:"boot"`
}

// Proven is false for an identity recorded on a kernel without SO_NETNS_COOKIE (before Linux
// 5.14): its inode alone cannot tell the namespace from a later one, so nothing may act on it.
func (id Identity) Proven() bool { return id.Cookie != 0 }

// InodeURL is the namespace as NSM clients name it: inode://<dev>/<ino>.
func (id Identity) InodeURL() string {
	return (&url.URL{Scheme: "inode", Host: fmt.Sprint(id.Dev), Path: fmt.Sprintf("/%d", id.Ino)}).String()
}

func (id Identity) String() string {
	return fmt.Sprintf("%s cookie %d", id.InodeURL(), id.Cookie)
}

// Of returns the identity of the namespace at path (a /proc/<pid>/ns/net, /proc/<pid>/fd/<n> or named
// namespace file).
func Of(path string) (Identity, error) {
	f, err := os.Open(path) //nolint:gosec // the path is a namespace the caller already holds
	if err != nil {
		return Identity{}, errors.Wrap(err, "netnsid")
	}
	defer func() { _ = f.Close() }()
	return OfFile(f)
}

// OfFile returns the identity of the namespace f refers to.
func OfFile(f *os.File) (Identity, error) {
	var stat unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &stat); err != nil {
		return Identity{}, errors.Wrapf(err, "netnsid: stat %s", f.Name())
	}
	if err := requireNetNS(f); err != nil {
		return Identity{}, err
	}
	cookie, err := cookieOf(f)
	if err != nil {
		return Identity{}, err
	}
	boot, err := bootID()
	if err != nil {
		return Identity{}, err
	}
	return Identity{Dev: stat.Dev, Ino: stat.Ino, Cookie: cookie, Boot: boot}, nil
}

// OfURL returns the identity of the namespace a file:// URL names.
func OfURL(fileURL string) (Identity, error) {
	u, err := url.Parse(fileURL)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return Identity{}, errors.Errorf("netnsid: %q is not a file:// namespace URL", fileURL)
	}
	return Of(u.Path)
}

func requireNetNS(f *os.File) error {
	nsType, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
	if err != nil {
		return errors.Wrapf(err, "netnsid: %s is not a namespace", f.Name())
	}
	if nsType != unix.CLONE_NEWNET {
		return errors.Errorf("netnsid: %s is not a network namespace", f.Name())
	}
	return nil
}

// namespaceDirs hold named namespaces (ip netns); processes' namespaces are under /proc.
var namespaceDirs = []string{"/var/run/netns", "/run/netns"}

// Open finds the namespace with this identity among the named namespaces and those of live
// processes, and opens it. found is false when no namespace has this identity any more: the kernel
// was rebooted, or no file names the inode, or the inode now belongs to another namespace. The
// caller owns the returned file; acting through it (file:///proc/self/fd/<n>) acts on exactly the
// namespace that was checked, whatever happens to the path it was found by.
func Open(id Identity) (f *os.File, found bool, err error) {
	if !id.Proven() {
		return nil, false, errors.Errorf("netnsid: %s has no cookie (the kernel lacks SO_NETNS_COOKIE): it cannot be told from a namespace that reused its inode", id.InodeURL())
	}
	boot, err := bootID()
	if err != nil {
		return nil, false, err
	}
	if boot != id.Boot {
		return nil, false, nil
	}
	for _, path := range candidates() {
		var stat unix.Stat_t
		if unix.Stat(path, &stat) != nil || stat.Dev != id.Dev || stat.Ino != id.Ino {
			continue
		}
		f, err := os.Open(path) //nolint:gosec // a namespace file found by its inode
		if err != nil {
			continue // the process exited meanwhile
		}
		current, err := OfFile(f)
		if err == nil && current == id {
			return f, true, nil
		}
		_ = f.Close()
		if err == nil {
			// The inode is the same, the namespace is not: the recorded one is gone.
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// FileURL is the URL of an open namespace file that stays valid while f is open.
func FileURL(f *os.File) string {
	return (&url.URL{Scheme: "file", Path: fmt.Sprintf("/proc/self/fd/%d", f.Fd())}).String()
}

func candidates() []string {
	var paths []string
	for _, dir := range namespaceDirs {
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		paths = append(paths, names...)
	}
	processes, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	return append(paths, processes...)
}

var boot struct {
	once sync.Once
	id   string
	err  error
}

func bootID() (string, error) {
	boot.once.Do(func() {
		data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		boot.id, boot.err = strings.TrimSpace(string(data)), errors.Wrap(err, "netnsid: reading the boot ID")
	})
	return boot.id, boot.err
}
