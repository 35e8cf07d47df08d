package domain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// The forwarder's own-VPP mode, as in the stock image: no VPP API socket exists at
// NSM_VPP_API_SOCKET, so the forwarder starts `vpp` from PATH through vpphelper, which reads
// /etc/vpp/helper/vpp.conf when it exists (it writes its own default otherwise, which this VPP
// build cannot run: docs/vpp.md) and serves the API on /var/run/vpp/api.sock. The harness gives
// each node's forwarder a private mount namespace in which those paths are its own:
//
//	/etc      overlay: the host's /etc plus vpp/helper/vpp.conf (realvpp.Layout: no DPDK, 4k pages)
//	/var/log  overlay (vpphelper creates /var/log/vpp)
//	/run      tmpfs: /run/vpp is <work>/<node>/vpp-run, where the harness reaches VPP's sockets
//	          and log; /run/netns is the host's
//	/dev/shm  tmpfs: VPP's shared memory
//
// Nothing changes on the host; everything goes with the mount namespace when the forwarder and
// its VPP end.

// ownVPPMounts is the script that builds the private mount namespace, then execs the forwarder
// (its binary path, which SPIFFE attests, unchanged): $1 is the node's directory, $2 the forwarder.
const ownVPPMounts = `set -e
d="$1"; shift
mount --rbind /run "$d/own/host-run"
mount -t overlay overlay -o lowerdir=/etc,upperdir="$d/own/etc",workdir="$d/own/etc-work" /etc
mount -t overlay overlay -o lowerdir=/var/log,upperdir="$d/own/log",workdir="$d/own/log-work" /var/log
mount -t tmpfs tmpfs /run
mkdir -p /run/netns /run/vpp
mount --rbind "$d/own/host-run/netns" /run/netns
mount --bind "$d/vpp-run" /run/vpp
mount -t tmpfs tmpfs /dev/shm
exec "$@"
`

// ownVPPSocket is where the stock forwarder looks for an external VPP; in its namespace nothing
// is there.
const ownVPPSocket = "/var/run/vpp/external/vpp-api.sock"

// prepareOwnVPP lays out node's private paths, points node.APISocket at its VPP's socket as the
// harness sees it, and returns how to run the forwarder and the environment it adds.
func (d *Domain) prepareOwnVPP(node *Node, dir string) (binary string, args, env []string, err error) {
	for _, sub := range []string{"own/host-run", "own/etc/vpp/helper", "own/etc-work", "own/log", "own/log-work", "vpp-run", "own/bin"} {
		if err = os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", nil, nil, err
		}
	}
	layout, err := realvpp.NewLayout("/var/run/vpp", node.Netns)
	if err != nil {
		return "", nil, nil, err
	}
	if err = os.WriteFile(filepath.Join(dir, "own/etc/vpp/helper/vpp.conf"), []byte(layout.Config()), 0o644); err != nil {
		return "", nil, nil, err
	}
	vppOnPath := filepath.Join(dir, "own/bin/vpp")
	if err = os.Symlink(d.cfg.RealVPP, vppOnPath); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, nil, err
	}
	node.APISocket = filepath.Join(dir, "vpp-run", "api.sock")
	// What the harness sees of that layout: the sockets and VPP's log (for the diagnostics).
	node.VPPLayout = &realvpp.Layout{Dir: filepath.Join(dir, "vpp-run"), Prefix: layout.Prefix}
	args = []string{"--mount", "--propagation", "private", "sh", "-c", ownVPPMounts, "sh", dir, d.cfg.Binaries.Forwarder}
	env = []string{
		"PATH=" + filepath.Dir(vppOnPath) + ":" + os.Getenv("PATH"),
		"NSM_VPP_API_SOCKET=" + ownVPPSocket,
		"NSM_VPP_INIT=AF_PACKET",
	}
	return "unshare", args, env, nil
}

// VPPPid is the process ID of node's VPP: the external one, or the one its forwarder started.
func (d *Domain) VPPPid(node *Node) (int, error) {
	if !d.cfg.ForwarderStartsVPP {
		return node.VPP.Pid(), nil
	}
	children, err := childrenOf(node.Forwarder.Pid())
	if err != nil {
		return 0, err
	}
	for _, pid := range children {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if resolved, _ := filepath.EvalSymlinks(d.cfg.RealVPP); exe == resolved {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%s has no vpp child (children %v)", node.Forwarder.Name(), children)
}

// KillVPP SIGKILLs node's VPP, as a crash does; the forwarder is left to notice.
func (d *Domain) KillVPP(node *Node) error {
	pid, err := d.VPPPid(node)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

func childrenOf(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var children []int
	for _, task := range tasks {
		data, readErr := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if readErr != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if child, convErr := strconv.Atoi(field); convErr == nil {
				children = append(children, child)
			}
		}
	}
	return children, nil
}

// requireOwnVPPGone checks, once node's forwarder has stopped, that the VPP it started has ended
// with it; one still running is killed and reported.
func requireOwnVPPGone(node *Node) error {
	if node.ownVPPPid == 0 {
		return nil
	}
	for i := 0; i < 50; i++ {
		if syscall.Kill(node.ownVPPPid, 0) == syscall.ESRCH {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(node.ownVPPPid, syscall.SIGKILL)
	return fmt.Errorf("%s left its VPP (pid %d) running", node.ForwarderName, node.ownVPPPid)
}
