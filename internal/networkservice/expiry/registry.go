package expiry

import (
	"context"
	"sync"
)

// connState serializes one connection's Request, Close and expiry: the expiry Close runs outside
// begin's serialization, so it must not overlap a late Request for the same connection.
type connState struct {
	mu sync.Mutex
	// generation changes on every arm and disarm, so a timer that fires late knows it is stale.
	generation  uint64
	cancelTimer context.CancelFunc

	// users and armed are guarded by registry.mu: they decide when the entry may be forgotten.
	users int
	armed bool
}

type registry struct {
	mu    sync.Mutex
	conns map[string]*connState
}

func newRegistry() registry {
	return registry{conns: map[string]*connState{}}
}

func (r *registry) lock(id string) *connState {
	r.mu.Lock()
	state, ok := r.conns[id]
	if !ok {
		state = new(connState)
		r.conns[id] = state
	}
	state.users++
	r.mu.Unlock()
	state.mu.Lock()
	return state
}

func (r *registry) unlock(id string, state *connState) {
	state.mu.Unlock()
	r.mu.Lock()
	state.users--
	if state.users == 0 && !state.armed {
		delete(r.conns, id)
	}
	r.mu.Unlock()
}

func (r *registry) setArmed(state *connState, armed bool) {
	r.mu.Lock()
	state.armed = armed
	r.mu.Unlock()
}
