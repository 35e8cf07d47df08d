package vppsim

import (
	"sync"

	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
)

// recorder keeps every request the handlers saw, in arrival order, for tests that assert
// on what a client programmed rather than only on the resulting state.
type recorder struct {
	server.Handler
	mu       sync.Mutex
	requests []api.Message
}

func (r *recorder) Handle(s *server.Session, req api.Message) ([]api.Message, bool) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	return r.Handler.Handle(s, req)
}

func (r *recorder) list() []api.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Message(nil), r.requests...)
}

// Requests lists every request clients sent (except the transport's own: the handshake,
// control_ping), in arrival order, including unimplemented ones. It is empty unless
// Config.RecordRequests was set.
func (s *Sim) Requests() []api.Message {
	if s.recorder == nil {
		return nil
	}
	return s.recorder.list()
}

// RequestsOf lists the recorded requests of type T, in arrival order.
func RequestsOf[T api.Message](s *Sim) []T {
	var out []T
	for _, req := range s.Requests() {
		if typed, ok := req.(T); ok {
			out = append(out, typed)
		}
	}
	return out
}
