package server

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"go.fd.io/govpp/api"
)

// flushTimeout bounds how long a session that ends waits for its client to read what is queued.
const flushTimeout = time.Second

// errSessionClosed is what Send returns once the session has ended.
var errSessionClosed = errors.New("session closed")

// Session is one connected API client.
type Session struct {
	Index uint32
	Name  string

	conn  *net.UnixConn
	table *MessageTable

	// The output queue, as VPP's socket transport keeps one per client (output_vector): a client
	// that reads slowly, or not for a while, gets everything later, and neither the simulator nor
	// the client is stalled or cut off meanwhile. Only a failed write ends the session.
	mu       sync.Mutex
	pending  [][]byte
	writeErr error
	ending   bool
	wake     chan struct{}
	ended    chan struct{} // closed by end
	written  chan struct{} // closed when the writer has stopped
}

func newSession(index uint32, conn *net.UnixConn, table *MessageTable) *Session {
	s := &Session{Index: index, conn: conn, table: table, wake: make(chan struct{}, 1), ended: make(chan struct{}), written: make(chan struct{})}
	go s.writeLoop()
	return s
}

// Send queues msg for the client with the given context (0 for events). It never blocks: events
// are sent while the state is locked.
func (s *Session) Send(msg api.Message, context uint32) error {
	id, ok := s.table.ID(msg)
	if !ok {
		return fmt.Errorf("message %s_%s is not in the message table", msg.GetMessageName(), msg.GetCrcString())
	}
	data, err := encodeReply(msg, id, s.Index, context)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.writeErr != nil:
		return s.writeErr
	case s.ending:
		return errSessionClosed
	}
	s.pending = append(s.pending, frame(data))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *Session) writeLoop() {
	defer close(s.written)
	for {
		select {
		case <-s.wake:
		case <-s.ended:
		}
		s.mu.Lock()
		batch, ending := s.pending, s.ending
		s.pending = nil
		s.mu.Unlock()
		buffers := net.Buffers(batch)
		if _, err := buffers.WriteTo(s.conn); err != nil {
			s.mu.Lock()
			s.writeErr = err
			s.mu.Unlock()
			_ = s.conn.Close() // VPP drops a client whose socket fails, and only then
			return
		}
		if ending { // nothing is queued once ending is set
			return
		}
	}
}

// end stops queueing, gives the client flushTimeout to read what is still queued, and closes the
// connection.
func (s *Session) end() {
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
	close(s.ended)
	select {
	case <-s.written:
	case <-time.After(flushTimeout):
	}
	_ = s.conn.Close()
	<-s.written
}

// SetRetval sets the Retval field most replies carry; replies without one are left as is.
func SetRetval(msg api.Message, code int32) {
	v := reflect.ValueOf(msg).Elem()
	if f := v.FieldByName("Retval"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int32 {
		f.SetInt(int64(code))
	}
}
