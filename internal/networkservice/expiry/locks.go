package expiry

// Locks are the per-connection locks the element holds around each Request, Close and expiry
// Close of a connection. Shared through WithLocks, they let a release made outside the chain (a
// previous run's connection released when its grace period ends, or on a Close the chain would
// drop) take turns with them, so that it never overlaps a Request that just began.
type Locks struct {
	registry
}

// NewLocks returns a set of per-connection locks to share with WithLocks.
func NewLocks() *Locks {
	return &Locks{registry: newRegistry()}
}

// Do runs f holding the lock of connection id.
func (l *Locks) Do(id string, f func()) {
	state := l.lock(id)
	defer l.unlock(id, state)
	f()
}
