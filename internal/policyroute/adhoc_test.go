package policyroute

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func BenchmarkAdhocManyConnections(b *testing.B) {
	for _, conns := range []int{25, 300} {
		b.Run(fmt.Sprint(conns), func(b *testing.B) {
			per := 10
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				n := newTestNS(b)
				for c := range conns {
					n.addLink(b, fmt.Sprint("nsm", c))
				}
				server := newChain()
				all := manyPolicies(conns * per)
				b.StartTimer()
				start := time.Now()
				for c := range conns {
					_, err := server.Request(quietContext(), newRequest(n, fmt.Sprint("conn-", c), fmt.Sprint("nsm", c), all[c*per:(c+1)*per]...))
					require.NoError(b, err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				n.remove()
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*conns*per), "ns/policy")
		})
	}
}
