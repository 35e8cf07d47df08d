package policyroute

import (
	"hash/fnv"
)

func (o *options) inRange(table uint32) bool {
	return table >= o.firstTable && table-o.firstTable < o.tableCount
}

// candidateTables is the probe sequence of a (connection, policy selector): a pure function of its inputs and
// the configured range, so any forwarder instance computes the same tables for the same policy.
func (o *options) candidateTables(connID string, sel selector) []uint32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(connID))
	_, _ = h.Write(sel.appendBinary([]byte{0}))
	seed := h.Sum64()

	out := make([]uint32, 0, o.probeLimit)
	for i := uint64(0); len(out) < o.probeLimit; i++ {
		table := o.firstTable + uint32(mix64(seed+i*0x9e3779b97f4a7c15)%uint64(o.tableCount))
		if !contains(out, table) {
			out = append(out, table)
		}
	}
	return out
}

// mix64 is the splitmix64 finalizer: consecutive probes of one seed land far apart in the range.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func contains(tables []uint32, table uint32) bool {
	for _, t := range tables {
		if t == table {
			return true
		}
	}
	return false
}
