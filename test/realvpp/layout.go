package realvpp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// shmDir is where VPP keeps its shared-memory API segments, named <prefix>-vpe-api and
// <prefix>-global_vm.
const shmDir = "/dev/shm"

// Layout is where one VPP keeps its state: a runtime directory for its sockets, configuration
// and log, and a prefix naming its shared-memory segments. Both must be unique on the machine:
// two VPPs with one prefix share, and break, one API segment.
type Layout struct {
	Dir    string
	Prefix string
}

// NewLayout is the layout of a VPP named name in dir: its prefix carries the calling process's
// pid, so that no other run uses it and SweepStale recognises it once this run is dead.
func NewLayout(dir, name string) (Layout, error) {
	l := Layout{Dir: dir, Prefix: prefixBase + strconv.Itoa(os.Getpid()) + "-" + name}
	return l, validPrefix(l.Prefix)
}

// ConfigPath is the start-up configuration written by WriteConfig.
func (l Layout) ConfigPath() string { return filepath.Join(l.Dir, "startup.conf") }

// APISocket is the binary API socket the forwarder and govpp dial.
func (l Layout) APISocket() string { return filepath.Join(l.Dir, "api.sock") }

// StatsSocket is the stats segment socket; beside the API socket, where the forwarder looks.
func (l Layout) StatsSocket() string { return filepath.Join(l.Dir, "stats.sock") }

// CLISocket is the debug CLI socket (vppctl -s).
func (l Layout) CLISocket() string { return filepath.Join(l.Dir, "cli.sock") }

// LogPath is VPP's own log (unix { log }); its stdout and stderr go where the caller says.
func (l Layout) LogPath() string { return filepath.Join(l.Dir, "vpp.log") }

// Config is the start-up configuration: VPP v24.10 without DPDK and without hugepages (4k pages
// for the heap, the buffers and the stats segment), as ../shared/vpp/startup.conf.template.
func (l Layout) Config() string {
	return fmt.Sprintf(`unix {
  nodaemon
  runtime-dir %[1]s
  cli-listen %[2]s
  log %[3]s
}
socksvr { socket-name %[4]s }
api-segment { prefix %[5]s }
memory { main-heap-size 512M main-heap-page-size 4k }
buffers {
  buffers-per-numa 16384
  page-size 4k
  default data-size 2048
}
statseg {
  socket-name %[6]s
  page-size 4k
}
plugins {
  plugin dpdk_plugin.so { disable }
}
`, l.Dir, l.CLISocket(), l.LogPath(), l.APISocket(), l.Prefix, l.StatsSocket())
}

// WriteConfig creates the runtime directory and writes Config into it.
func (l Layout) WriteConfig() error {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(l.ConfigPath(), []byte(l.Config()), 0o644)
}

// sockets are the files VPP creates in the runtime directory; a VPP that is stopped or killed
// leaves some of them (a SIGTERM removes only the stats socket).
func (l Layout) sockets() []string {
	return []string{l.APISocket(), l.StatsSocket(), l.CLISocket()}
}

// segments are the shared-memory files of the prefix that exist now.
func (l Layout) segments() ([]string, error) {
	return filepath.Glob(filepath.Join(shmDir, l.Prefix+"-*"))
}

// Leftovers lists what a VPP of this layout left on the machine: its shared-memory segments and
// sockets. Empty once Sweep ran after VPP ended.
func (l Layout) Leftovers() ([]string, error) {
	found, err := l.segments()
	for _, socket := range l.sockets() {
		if _, statErr := os.Lstat(socket); statErr == nil {
			found = append(found, socket)
		}
	}
	return found, err
}

// Sweep removes what a VPP of this layout left once it has ended: its sockets and its
// shared-memory segments (a SIGKILLed VPP keeps both). Call it only when that VPP is gone.
func (l Layout) Sweep() error {
	var errs []error
	segments, err := l.segments()
	errs = append(errs, err)
	for _, path := range append(segments, l.sockets()...) {
		if removeErr := os.Remove(path); removeErr != nil && !errors.Is(removeErr, os.ErrNotExist) {
			errs = append(errs, removeErr)
		}
	}
	return errors.Join(errs...)
}

// validPrefix rejects prefixes whose segments could be mistaken for another VPP's.
func validPrefix(prefix string) error {
	if prefix == "" || strings.ContainsAny(prefix, "/ \t\n") {
		return fmt.Errorf("api-segment prefix %q: must be a non-empty file name", prefix)
	}
	return nil
}
