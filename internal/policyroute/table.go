package policyroute

import (
	"encoding/binary"
	"hash/fnv"
)

func (o *options) inRange(table uint32) bool {
	return table >= o.firstTable && table-o.firstTable < o.tableCount
}

// candidateTables is the probe sequence of a (connection, policy selector): a pure function of its inputs and
// the configured range, so any forwarder instance computes the same tables for the same policy.
func (o *options) candidateTables(connID, selectorKey string) []uint32 {
	out := make([]uint32, 0, o.probeLimit)
	h := fnv.New64a()
	var probe [4]byte
	for i := 0; len(out) < o.probeLimit; i++ {
		h.Reset()
		_, _ = h.Write([]byte(connID))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(selectorKey))
		binary.BigEndian.PutUint32(probe[:], uint32(i))
		_, _ = h.Write(probe[:])
		table := o.firstTable + uint32(h.Sum64()%uint64(o.tableCount))
		if !contains(out, table) {
			out = append(out, table)
		}
	}
	return out
}

func contains(tables []uint32, table uint32) bool {
	for _, t := range tables {
		if t == table {
			return true
		}
	}
	return false
}
