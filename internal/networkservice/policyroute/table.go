package policyroute

// FNV-1a, as hash/fnv computes it; written out so a connection's share of the hash is computed once
// for all its selectors.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func (o *options) inRange(table uint32) bool {
	return table >= o.firstTable && table-o.firstTable < o.tableCount
}

// prober computes the probe sequences of one connection.
type prober struct {
	opts     *options
	connSeed uint64
	buf      []byte
}

func (o *options) prober(connID string) *prober {
	return &prober{opts: o, connSeed: fnvAdd(fnvOffset, []byte(connID))}
}

// candidateTables is the probe sequence of a (connection, policy selector): a pure function of its inputs and
// the configured range, so any forwarder instance computes the same tables for the same policy.
func (o *options) candidateTables(connID string, sel selector) []uint32 {
	return o.prober(connID).candidates(sel)
}

func (p *prober) candidates(sel selector) []uint32 {
	p.buf = selectorKey(append(p.buf[:0], 0), sel)
	seed := fnvAdd(p.connSeed, p.buf)
	o := p.opts
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
