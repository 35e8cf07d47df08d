package fdtransport

import "sync"

// Default caps of a Budget. nsmgr is one peer that carries every pod's namespace, and a namespace
// is held for the retention after its last arrival: DefaultPeerLimit covers a node that starts and
// refreshes a thousand pods' connections within the retention. The total leaves room for a few
// such peers and stays far below the descriptor limit of a container (2^20).
const (
	DefaultPeerLimit  = 1024
	DefaultTotalLimit = 4096
)

// Why a received descriptor was closed at once instead of held (the metric's reasons).
const (
	RefusedUnauthenticated = "unauthenticated"
	RefusedPeerLimit       = "peer_limit"
	RefusedTotalLimit      = "total_limit"
)

// Budget caps the descriptors held for claims, per peer (its SPIFFE ID, or the connection when the
// peer has none) and in total, across every connection that shares it.
type Budget struct {
	perPeer, total int

	mu     sync.Mutex
	held   int
	byPeer map[string]int
}

// NewBudget returns a budget of perPeer descriptors per peer and total in all; a non-positive cap
// keeps its default.
func NewBudget(perPeer, total int) *Budget {
	if perPeer <= 0 {
		perPeer = DefaultPeerLimit
	}
	if total <= 0 {
		total = DefaultTotalLimit
	}
	return &Budget{perPeer: perPeer, total: total, byPeer: map[string]int{}}
}

// defaultBudget is shared by every connection whose credentials were given none: the total is the
// process's.
var defaultBudget = NewBudget(DefaultPeerLimit, DefaultTotalLimit)

// take counts one more descriptor held for peer, or returns why it may not be held.
func (b *Budget) take(peer string) (refused string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byPeer[peer] >= b.perPeer:
		return RefusedPeerLimit
	case b.held >= b.total:
		return RefusedTotalLimit
	}
	b.byPeer[peer]++
	b.held++
	return ""
}

// release gives back n descriptors held for peer.
func (b *Budget) release(peer string, n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if b.byPeer[peer] -= n; b.byPeer[peer] <= 0 {
		delete(b.byPeer, peer)
	}
}

// limit is the cap that refused names, for a log line.
func (b *Budget) limit(refused string) int {
	if refused == RefusedTotalLimit {
		return b.total
	}
	return b.perPeer
}
