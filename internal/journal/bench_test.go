package journal_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/journal"
)

// BenchmarkRefresh measures the journal's share of a refresh (tokens changed, nothing else) with
// n connections recorded: it should not grow with n.
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{10, 3000} {
		b.Run(fmt.Sprintf("connections=%d", n), func(b *testing.B) {
			j, err := journal.Open(context.Background(), b.TempDir())
			require.NoError(b, err)
			for i := range n {
				require.NoError(b, j.Record(kernelConnection(fmt.Sprintf("conn-%d", i), "token")))
			}
			refresh := kernelConnection("conn-0", "new-token")
			b.ResetTimer()
			for range b.N {
				if err := j.Record(refresh); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChangedRecord measures a write: temporary file, fsync, rename and directory sync.
func BenchmarkChangedRecord(b *testing.B) {
	j, err := journal.Open(context.Background(), b.TempDir())
	require.NoError(b, err)
	conns := [2]string{"172.16.0.2/32", "172.16.0.3/32"}
	b.ResetTimer()
	for i := range b.N {
		conn := kernelConnection("conn-0", "token")
		conn.GetContext().GetIpContext().Policies[0].From = conns[i%2]
		if err := j.Record(conn); err != nil {
			b.Fatal(err)
		}
	}
}
