package xconnect_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelif"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// connectionsPerLeakRun is enough for a leak of one goroutine or descriptor per connection to
// stand out from the background, and few enough to keep the suite lean.
const connectionsPerLeakRun = 30

// Connections opened and closed through the whole chain, over gRPC with descriptor passing, leave
// the forwarder with the goroutines and open file descriptors it had before them.
func TestManyConnectionsLeaveNoGoroutineOrDescriptorBehind(t *testing.T) {
	for _, kind := range []kernelif.Kind{kernelif.Tap, kernelif.Veth} {
		t.Run(kind.String(), func(t *testing.T) {
			eachBackendFor(t, kind, func(t *testing.T, backend vpptest.Backend) {
				nscNS, nseNS := newTestNetNS(t), newTestNetNS(t)
				h := newHarness(t, backend, kind, kernelNextHop(nseNS, "nse-1"))
				// The first connection starts what lives as long as the forwarder: the dial to the next
				// hop, VPP event and stats clients.
				h.close(t, h.request(t, kernelRequest("conn-warm-up", nscNS, "nsc-1", payload.IP)))
				goroutines, descriptors := settledCounts(t)

				for i := range connectionsPerLeakRun {
					h.close(t, h.request(t, kernelRequest(fmt.Sprintf("conn-%d", i), nscNS, "nsc-1", payload.IP)))
				}

				nowGoroutines, nowDescriptors := counts(t)
				for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); nowGoroutines, nowDescriptors = counts(t) {
					if nowGoroutines <= goroutines && nowDescriptors <= descriptors {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				require.LessOrEqual(t, nowGoroutines, goroutines, "goroutines after %d connections; they are:\n%s",
					connectionsPerLeakRun, goroutineDump(t))
				require.LessOrEqual(t, nowDescriptors, descriptors, "open descriptors after %d connections; they are:\n%s",
					connectionsPerLeakRun, descriptorList(t))
			})
		})
	}
}

// Each client namespace the forwarder received stays open after its connection closed: grpcfd
// keeps every descriptor it receives, one per inode, for the life of the transport connection, so
// that a later call may name it again. A node whose pods come and go accumulates them on nsmgr's
// connection, and each one keeps a dead pod's namespace alive. (In this test nsmgr's end is in the
// same process and caches the descriptors the forwarder sends back, so the count doubles.)
func TestConnectionsFromManyNamespacesLeaveNoDescriptorBehind(t *testing.T) {
	t.Skip("issue 12: grpcfd keeps each received namespace descriptor for the life of nsmgr's connection")
	const namespaces = 10
	nseNS := newTestNetNS(t)
	h := newHarness(t, vpptest.Sim, kernelif.Tap, kernelNextHop(nseNS, "nse-1"))
	h.close(t, h.request(t, kernelRequest("conn-warm-up", newTestNetNS(t), "nsc-1", payload.IP)))
	_, descriptors := settledCounts(t)

	for i := range namespaces {
		h.close(t, h.request(t, kernelRequest(fmt.Sprintf("conn-%d", i), newTestNetNS(t), "nsc-1", payload.IP)))
	}

	_, nowDescriptors := counts(t)
	for deadline := time.Now().Add(5 * time.Second); nowDescriptors > descriptors && time.Now().Before(deadline); _, nowDescriptors = counts(t) {
		time.Sleep(100 * time.Millisecond)
	}
	require.LessOrEqual(t, nowDescriptors, descriptors, "open descriptors after connections from %d namespaces", namespaces)
}

func counts(t *testing.T) (goroutines, descriptors int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return runtime.NumGoroutine(), len(entries)
}

// goroutineDump names what is running, grouped by stack, for a failure to say what was left.
func goroutineDump(t *testing.T) string {
	t.Helper()
	var dump strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&dump, 1))
	return dump.String()
}

// descriptorList says what each open descriptor points at.
func descriptorList(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var list strings.Builder
	for _, entry := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + entry.Name())
		fmt.Fprintf(&list, "%s -> %s\n", entry.Name(), target)
	}
	return list.String()
}

// settledCounts waits for what the previous connection set in motion to end, then counts.
func settledCounts(t *testing.T) (goroutines, descriptors int) {
	t.Helper()
	goroutines, descriptors = counts(t)
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		nowGoroutines, nowDescriptors := counts(t)
		if nowGoroutines == goroutines && nowDescriptors == descriptors {
			break
		}
		goroutines, descriptors = max(goroutines, nowGoroutines), max(descriptors, nowDescriptors)
	}
	return goroutines, descriptors
}
