package topology_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// sdk-vpp's nsmonitor finds an endpoint's pod as the process named pause in the namespace the
// endpoint passed, and takes its end for the pod's deletion: a pod with a sandbox must show
// exactly that, from AddPodWithSandbox until DeletePod.
func TestPodSandboxIsAPauseProcessInThePodNamespaceUntilDeletePod(t *testing.T) {
	requireRoot(t)
	topo, err := topology.New(topology.RunPrefix("e2e")+"sbx-", 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = topo.Close() })

	pod, err := topo.AddPodWithSandbox(topo.Nodes[0], "nse")
	require.NoError(t, err)
	podNetns := inodeOf(t, "/var/run/netns/"+pod.Netns)
	require.Eventually(t, func() bool { return len(pauseProcessesIn(podNetns)) == 1 },
		5*time.Second, 100*time.Millisecond, "one pause process in the pod's namespace")

	plain, err := topo.AddPod(topo.Nodes[0], "nsc")
	require.NoError(t, err)
	require.Empty(t, pauseProcessesIn(inodeOf(t, "/var/run/netns/"+plain.Netns)), "AddPod: no sandbox")

	require.NoError(t, topo.DeletePod(pod))
	require.Empty(t, pauseProcessesIn(podNetns), "the pause process ends with the pod")
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Sys().(*syscall.Stat_t).Ino
}

// pauseProcessesIn are the pids of the processes named pause whose network namespace is the
// one with inode netnsInode.
func pauseProcessesIn(netnsInode uint64) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		info, err := os.Stat("/proc/" + e.Name() + "/ns/net")
		if err != nil || info.Sys().(*syscall.Stat_t).Ino != netnsInode {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(comm)) == "pause" {
			pids = append(pids, pid)
		}
	}
	return pids
}
