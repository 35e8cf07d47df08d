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

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/iprule"
)

// benchCase installs count policies of one connection into a fresh namespace with a server from newServer.
type benchCase struct {
	name      string
	count     int
	newServer func() networkservice.NetworkServiceServer
}

func benchCases() []benchCase {
	ours := func() networkservice.NetworkServiceServer { return next.NewNetworkServiceServer(NewServer()) }
	stock := func() networkservice.NetworkServiceServer { return next.NewNetworkServiceServer(iprule.NewServer()) }
	return []benchCase{
		{"policyroute/250", 250, ours},
		{"policyroute/10000", 10000, ours},
		{"iprule/250", 250, stock},
	}
}

func quietContext() context.Context {
	return log.WithLog(context.Background(), log.Empty())
}

// BenchmarkInstall measures a first Request that installs every policy.
func BenchmarkInstall(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				n := newTestNS(b)
				n.addLink(b, "nsm0")
				req := newRequest(n, "conn-1", "nsm0", manyPolicies(bc.count)...)
				server := bc.newServer()
				b.StartTimer()

				start := time.Now()
				_, err := server.Request(quietContext(), req)
				elapsed += time.Since(start)
				b.StopTimer()
				require.NoError(b, err)
				n.remove()
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*bc.count), "ns/policy")
		})
	}
}

// BenchmarkRestartRecovery measures the Request of a restarted forwarder (a new server) against intact state.
func BenchmarkRestartRecovery(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			b.StopTimer()
			n := newTestNS(b)
			n.addLink(b, "nsm0")
			req := newRequest(n, "conn-1", "nsm0", manyPolicies(bc.count)...)
			_, err := bc.newServer().Request(quietContext(), req)
			require.NoError(b, err)

			var elapsed time.Duration
			for range b.N {
				server := bc.newServer()
				b.StartTimer()
				start := time.Now()
				_, err := server.Request(quietContext(), req)
				elapsed += time.Since(start)
				b.StopTimer()
				require.NoError(b, err)
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*bc.count), "ns/policy")
		})
	}
}

// BenchmarkInstallManyConnections spreads the policies over connections of 10 policies, each with its own link.
// Every Request reads the namespace's rules and its link's routes, so the cost per policy grows with what the
// namespace already holds; this shows by how much.
func BenchmarkInstallManyConnections(b *testing.B) {
	const perConnection = 10
	for _, connections := range []int{25, 400} {
		b.Run(fmt.Sprintf("%dx%d", connections, perConnection), func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				n := newTestNS(b)
				for c := range connections {
					n.addLink(b, fmt.Sprint("nsm", c))
				}
				server := next.NewNetworkServiceServer(NewServer())
				policies := manyPolicies(connections * perConnection)
				b.StartTimer()

				start := time.Now()
				for c := range connections {
					req := newRequest(n, fmt.Sprint("conn-", c), fmt.Sprint("nsm", c), policies[c*perConnection:(c+1)*perConnection]...)
					_, err := server.Request(quietContext(), req)
					require.NoError(b, err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				n.remove()
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*connections*perConnection), "ns/policy")
		})
	}
}

func TestManyPoliciesAreDistinct(t *testing.T) {
	parsed, err := parsePolicies(manyPolicies(10000))
	require.NoError(t, err, fmt.Sprint("benchmark policies must be valid"))
	require.Len(t, parsed, 10000)
}
