package journal_test

import (
	"fmt"
	"testing"
)

// BenchmarkRefresh measures the journal's share of a refresh (tokens changed, nothing else) with
// n connections recorded: it should not grow with n.
func BenchmarkRefresh(b *testing.B) {
	for _, n := range []int{10, 3000} {
		b.Run(fmt.Sprintf("connections=%d", n), func(b *testing.B) {
			j := open(b, b.TempDir())
			for i := range n {
				id := fmt.Sprintf("conn-%d", i)
				program(b, j, kernelConnection(id, "token", "inode://4/4026532000"), outgoingConnection(id, "token"))
			}
			refresh, answer := kernelConnection("conn-0", "new-token", "inode://4/4026532000"), outgoingConnection("conn-0", "new-token")
			b.ResetTimer()
			for range b.N {
				program(b, j, refresh, answer)
			}
		})
	}
}

// BenchmarkChangedRecord measures a Request that changes the context: intent and commit, each a
// temporary file renamed over the record.
func BenchmarkChangedRecord(b *testing.B) {
	j := open(b, b.TempDir())
	sources := [2]string{"172.16.0.2/32", "172.16.0.3/32"}
	b.ResetTimer()
	for i := range b.N {
		conn, answer := kernelConnection("conn-0", "token", "inode://4/4026532000"), outgoingConnection("conn-0", "token")
		conn.GetContext().GetIpContext().Policies[0].From = sources[i%2]
		answer.GetContext().GetIpContext().Policies[0].From = sources[i%2]
		program(b, j, conn, answer)
	}
}
