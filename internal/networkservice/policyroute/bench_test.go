package policyroute

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/iprule"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// benchShape is a namespace holding connections, each with its own link and policies of its own.
type benchShape struct {
	connections, policies int
	// withIprule runs sdk-kernel's iprule on the shape too: its lowest-free-ID scan reaches the kernel's
	// reserved tables (253-255) beyond about 250 policies in one namespace, so larger shapes are ours alone.
	withIprule bool
}

func (s benchShape) String() string { return fmt.Sprintf("%dx%d", s.connections, s.policies) }

var benchShapes = []benchShape{{1, 250, true}, {50, 5, true}, {200, 50, false}, {1, 10000, false}}

// benchImpl builds a server; done releases what it holds once the measurement is over.
type benchImpl struct {
	name      string
	newServer func() (server networkservice.NetworkServiceServer, done func())
	// reusable is true when closing every connection leaves the namespace as it was before the install,
	// so one namespace and its links serve every iteration; iprule gets a fresh namespace each time.
	reusable bool
}

var (
	ours = benchImpl{"policyroute", func() (networkservice.NetworkServiceServer, func()) {
		registry := routeview.NewRegistry(routeview.ForwarderProtocol)
		return next.NewNetworkServiceServer(NewServer(WithRegistry(registry))), registry.Close
	}, true}
	stock = benchImpl{"iprule", func() (networkservice.NetworkServiceServer, func()) {
		return next.NewNetworkServiceServer(iprule.NewServer()), func() {}
	}, false}
)

func benchImpls(shape benchShape) []benchImpl {
	if shape.withIprule {
		return []benchImpl{ours, stock}
	}
	return []benchImpl{ours}
}

func quietContext() context.Context {
	return log.WithLog(context.Background(), log.Empty())
}

// shapeNamespace is a namespace with a link per connection of the shape, and the connections' Requests.
type shapeNamespace struct {
	*testNS
	requests []*networkservice.NetworkServiceRequest
}

func newShapeNamespace(tb testing.TB, shape benchShape) *shapeNamespace {
	n := &shapeNamespace{testNS: newTestNS(tb)}
	policies := manyPolicies(shape.connections * shape.policies)
	for c := range shape.connections {
		n.addLink(tb, fmt.Sprint("nsm", c))
		n.requests = append(n.requests, newRequest(n.testNS, fmt.Sprint("conn-", c), fmt.Sprint("nsm", c), policies[c*shape.policies:(c+1)*shape.policies]...))
	}
	return n
}

func (n *shapeNamespace) requestAll(tb testing.TB, server networkservice.NetworkServiceServer) (cost, []*networkservice.Connection) {
	conns := make([]*networkservice.Connection, 0, len(n.requests))
	took := measure(func() {
		for _, req := range n.requests {
			conn, err := server.Request(quietContext(), req)
			require.NoError(tb, err)
			conns = append(conns, conn)
		}
	})
	return took, conns
}

// cost is what a measured section took: the wall-clock time, and the CPU time the process spent, in user
// space and in the kernel on its behalf. On a machine busy with other work the wall-clock time includes
// waiting for a CPU, which the CPU time leaves out.
type cost struct{ wall, cpu time.Duration }

func (c *cost) add(o cost) {
	c.wall += o.wall
	c.cpu += o.cpu
}

func measure(section func()) cost {
	wall, cpu := time.Now(), processCPU()
	section()
	return cost{wall: time.Since(wall), cpu: processCPU() - cpu}
}

func processCPU() time.Duration {
	var usage unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &usage); err != nil {
		panic(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func closeAll(tb testing.TB, server networkservice.NetworkServiceServer, conns []*networkservice.Connection) {
	for _, conn := range conns {
		_, err := server.Close(quietContext(), conn)
		require.NoError(tb, err)
	}
}

// BenchmarkInstall measures the first Requests of every connection of a shape into a namespace holding none
// of their rules or routes yet, next to the raw baseline of the same writes (bench_raw_test.go).
func BenchmarkInstall(b *testing.B) {
	for _, shape := range benchShapes {
		for _, impl := range benchImpls(shape) {
			b.Run(fmt.Sprintf("%s/%s", impl.name, shape), func(b *testing.B) {
				b.StopTimer()
				var n *shapeNamespace
				var elapsed cost
				for range b.N {
					if n == nil || !impl.reusable {
						n = newShapeNamespace(b, shape)
					}
					server, done := impl.newServer()
					took, conns := n.requestAll(b, server)
					elapsed.add(took)
					if impl.reusable {
						closeAll(b, server, conns)
						require.Empty(b, n.snapshot(b, newOptions(nil)), "closing must leave the namespace as it was")
					} else {
						n.remove()
					}
					done()
				}
				reportPerPolicy(b, elapsed, shape)
			})
		}
		b.Run(fmt.Sprintf("raw-batched/%s", shape), func(b *testing.B) { benchRawInstall(b, shape) })
	}
}

// BenchmarkRestartRecovery measures a restarted forwarder (a new server, no memory) requesting every
// connection of a shape again against the state an earlier instance installed, and counts the rule and
// route writes it makes. After a recovery that wrote something the namespace is built anew.
func BenchmarkRestartRecovery(b *testing.B) {
	for _, shape := range benchShapes {
		for _, impl := range benchImpls(shape) {
			b.Run(fmt.Sprintf("%s/%s", impl.name, shape), func(b *testing.B) {
				b.StopTimer()
				var n *shapeNamespace
				var writes *monitor
				var elapsed cost
				written, lastWritten := 0, 0
				for range b.N {
					if n == nil || lastWritten > 0 {
						if n != nil {
							n.remove()
						}
						n = newShapeNamespace(b, shape)
						installer, done := impl.newServer()
						n.requestAll(b, installer)
						done()
						writes = newMonitor(b, n.testNS, nil)
						writes.take(b)
					}
					server, done := impl.newServer()
					took, _ := n.requestAll(b, server)
					elapsed.add(took)
					done()
					lastWritten = len(writes.take(b))
					written += lastWritten
				}
				reportPerPolicy(b, elapsed, shape)
				b.ReportMetric(float64(written)/float64(b.N), "writes/recovery")
			})
		}
	}
}

// reportPerPolicy reports the measured wall-clock and CPU time per policy, in place of the time per
// iteration, which includes what each iteration builds and tears down.
func reportPerPolicy(b *testing.B, elapsed cost, shape benchShape) {
	policies := float64(b.N * shape.connections * shape.policies)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(elapsed.wall.Nanoseconds())/policies, "ns/policy")
	b.ReportMetric(float64(elapsed.cpu.Nanoseconds())/policies, "cpu-ns/policy")
}

func TestManyPoliciesAreDistinct(t *testing.T) {
	parsed, err := parsePolicies(manyPolicies(10000))
	require.NoError(t, err, fmt.Sprint("benchmark policies must be valid"))
	require.Len(t, parsed, 10000)
}
