package xconnect_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
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

// Each client namespace the forwarder received is let go of once its connection closed. grpcfd
// keeps every descriptor it receives, one per inode, for the life of the transport connection, and
// nsmgr's connection lives as long as the forwarder: a node whose pods come and go accumulates
// them, each keeping a dead pod's namespace alive. The forwarder's transport (package fdtransport)
// holds one only for a retention after its last arrival, here a short one. With grpcfd at the
// forwarder's end instead, as in the stock forwarder, one descriptor per namespace stays.
//
// What is counted is every descriptor of the process open on a client's namespace. nsmgr's end is
// in this process too and caches the namespaces the forwarder passes back: it runs fdtransport
// with the same retention, so that what is left is the forwarder's. (The netlink sockets of the
// forwarder's route views also keep a namespace alive, by design for a linger of 30 s after its
// last connection, see package routeview; they are no descriptors of the namespace, and
// TestManyConnectionsLeaveNoGoroutineOrDescriptorBehind counts every descriptor.)
func TestConnectionsFromManyNamespacesLeaveNoDescriptorBehind(t *testing.T) {
	const namespaces = 10
	const retention = time.Second
	ours := func() credentials.TransportCredentials {
		return fdtransport.TransportCredentials(insecure.NewCredentials(), fdtransport.WithRetention(retention))
	}
	for _, forwarderEnd := range []struct {
		name  string
		creds func() credentials.TransportCredentials
		left  int
	}{
		{"fdtransport", ours, 0},
		{"grpcfd", recvnetnstest.NSMgrCredentials, namespaces},
	} {
		t.Run(forwarderEnd.name, func(t *testing.T) {
			nseNS := newTestNetNS(t)
			h := newHarnessServed(t, vpptest.Sim, kernelif.Tap, kernelNextHop(nseNS, "nse-1"),
				func(t *testing.T, forwarder endpoint.Endpoint) *nsmgr {
					return serveForwarderOver(t, forwarder, forwarderEnd.creds(), ours())
				},
				func(*testVPP) []xconnect.Option { return nil })

			var clients []string
			for i := range namespaces {
				clients = append(clients, newTestNetNS(t))
				h.close(t, h.request(t, kernelRequest(fmt.Sprintf("conn-%d", i), clients[i], "nsc-1", payload.IP)))
			}

			open := descriptorsOn(t, clients)
			for deadline := time.Now().Add(retention + 5*time.Second); open > forwarderEnd.left && time.Now().Before(deadline); open = descriptorsOn(t, clients) {
				time.Sleep(100 * time.Millisecond)
			}
			require.Equal(t, forwarderEnd.left, open, "descriptors open on %d clients' namespaces after their connections closed", namespaces)
		})
	}
}

// descriptorsOn counts this process's descriptors open on the namespaces at paths.
func descriptorsOn(t *testing.T, paths []string) int {
	t.Helper()
	ids := map[string]bool{}
	for _, path := range paths {
		ids[netnsID(path)] = true
	}
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	open := 0
	for _, entry := range entries {
		if ids[netnsID(filepath.Join("/proc/self/fd", entry.Name()))] {
			open++
		}
	}
	return open
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
