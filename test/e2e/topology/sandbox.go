package topology

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// A Kubernetes pod has a sandbox process, pause, in its network namespace from the pod's creation
// to its deletion. sdk-vpp's nsmonitor, in the chain toward the endpoint of the stock forwarder
// and of this one, finds an endpoint's pod by that process and closes the endpoint's connections
// when it goes. That is how a forwarder learns that an endpoint pod was deleted: the namespace
// itself outlives the pod, since sdk's recvfd (in the forwarder and the nsmgr) holds its
// descriptor for each connection until Close, and with it the interfaces and addresses that
// would still answer the clients' liveness pings.

// sandboxCommand is the name nsmonitor looks for (/proc/<pid>/stat).
const sandboxCommand = "pause"

var (
	sandboxOnce sync.Once
	sandboxPath string
	sandboxErr  error
)

// sandboxBinary is a symlink named pause to sleep: the kernel names a process after the path it
// was executed by, so it runs as pause.
func sandboxBinary() (string, error) {
	sandboxOnce.Do(func() {
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			sandboxErr = err
			return
		}
		dir, err := os.MkdirTemp("", "e2e-sandbox-")
		if err != nil {
			sandboxErr = err
			return
		}
		sandboxPath = filepath.Join(dir, sandboxCommand)
		sandboxErr = os.Symlink(sleep, sandboxPath)
	})
	return sandboxPath, sandboxErr
}

// AddPodWithSandbox is AddPod with a pause process in the pod's namespace until DeletePod, as a
// Kubernetes pod has.
func (t *Topology) AddPodWithSandbox(node *Node, name string) (*Pod, error) {
	pod, err := t.AddPod(node, name)
	if err != nil {
		return nil, err
	}
	binary, err := sandboxBinary()
	if err == nil {
		pod.sandbox = exec.Command("ip", "netns", "exec", pod.Netns, binary, "infinity")
		err = pod.sandbox.Start()
	}
	if err != nil {
		pod.sandbox = nil
		return nil, errors.Join(fmt.Errorf("pod %s's sandbox process: %w", name, err), t.DeletePod(pod))
	}
	return pod, nil
}

// stopSandbox ends the pod's pause process, if it has one.
func (p *Pod) stopSandbox() {
	if p.sandbox == nil {
		return
	}
	_ = p.sandbox.Process.Kill()
	_ = p.sandbox.Wait()
	p.sandbox = nil
}
