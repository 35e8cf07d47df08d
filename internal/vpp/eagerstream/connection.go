package eagerstream

import (
	"context"
	"errors"
	"path"
	"reflect"
	"sync"
	"time"

	"github.com/networkservicemesh/govpp/binapi/memclnt"
	"go.fd.io/govpp/api"
)

// flushTimeout bounds how long Close waits for VPP to answer its control ping: VPP answers in
// order, so its reply means no reply to the stream's earlier requests is still on its way.
const flushTimeout = 2 * time.Second

// pingPath is the binapi tree of the control ping Close sends; a stream whose requests came from
// another tree is not flushed (its replies would be looked up in the ping's tree).
var pingPath = binapiPath(&memclnt.ControlPing{})

func binapiPath(msg api.Message) string {
	return path.Dir(reflect.TypeOf(msg).Elem().PkgPath())
}

// errClosed is what a closed stream answers, as govpp's own streams do.
var errClosed = errors.New("stream closed")

type connection struct {
	api.Connection
}

// NewConnection returns conn whose streams queue their replies without bound; Invoke and
// WatchEvent are conn's own.
func NewConnection(conn api.Connection) api.Connection {
	return &connection{Connection: conn}
}

func (c *connection) NewStream(ctx context.Context, options ...api.StreamOption) (api.Stream, error) {
	// The reader ends with the caller's context: sdk-vpp leaves some streams open, and their
	// readers must not outlive the call (a stream of a cancelled call is not drained at Close).
	readCtx, stopReading := context.WithCancel(ctx)
	inner, err := c.Connection.NewStream(readCtx, options...)
	if err != nil {
		stopReading()
		return nil, err
	}
	return &stream{inner: inner, ctx: ctx, stopReading: stopReading, arrived: make(chan struct{}, 1), pinged: make(chan struct{}, 1), readerDone: make(chan struct{}), flushable: true}, nil
}

// stream reads inner from its first SendMsg on (govpp resolves a reply's type by the package of
// the last message sent, which SendMsg records only once the message is out) until it is closed.
type stream struct {
	inner       api.Stream
	ctx         context.Context
	stopReading context.CancelFunc
	readerDone  chan struct{}
	arrived     chan struct{}
	pinged      chan struct{}

	mu        sync.Mutex
	started   bool
	queue     []api.Message
	readErr   error
	closed    bool
	pingsSent int  // control pings sent on the stream
	pingsSeen int  // their replies read
	flushable bool // every request came from pingPath's binapi tree
	// requestAfterPing is whether a request went out after the last control ping: VPP may still
	// owe its reply even once every ping was answered.
	requestAfterPing bool
}

func (s *stream) Context() context.Context {
	return s.ctx
}

func (s *stream) SendMsg(msg api.Message) error {
	if err := s.inner.SendMsg(msg); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, isPing := msg.(*memclnt.ControlPing)
	if isPing {
		s.pingsSent++
	}
	s.requestAfterPing = !isPing
	s.flushable = s.flushable && binapiPath(msg) == pingPath
	if !s.started && !s.closed {
		s.started = true
		go s.read()
	}
	return nil
}

func (s *stream) read() {
	defer close(s.readerDone)
	for {
		msg, err := s.inner.RecvMsg()
		s.mu.Lock()
		if err != nil {
			s.readErr = err
		} else {
			s.queue = append(s.queue, msg)
			if _, isPingReply := msg.(*memclnt.ControlPingReply); isPingReply {
				s.pingsSeen++
				signal(s.pinged)
			}
		}
		s.mu.Unlock()
		signal(s.arrived)
		if err != nil {
			signal(s.pinged)
			return
		}
	}
}

// RecvMsg returns the next queued reply, or, once the queue is empty, the error that ended the
// reading.
func (s *stream) RecvMsg() (api.Message, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, errClosed
		case len(s.queue) > 0:
			msg := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return msg, nil
		case s.readErr != nil:
			err := s.readErr
			s.mu.Unlock()
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-s.arrived:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// Close reads what VPP still owes the stream, then stops the reading, then closes the inner
// stream. govpp hands a closed stream's channel, with whatever replies are left in it, to the next
// stream, and its Invoke decodes the first reply it finds there as the one it asked for: a dump
// closed before its end (sdk-vpp stops at the interface it looks for) left details that a later
// TapCreateV3 read as its reply, with a sw_if_index that was no tap. The reader must not take the
// next stream's replies either, hence stopping it before the inner Close.
func (s *stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		s.flush()
	}
	s.stopReading()
	if started {
		<-s.readerDone
	}
	return s.inner.Close()
}

// flush sends a control ping and waits, up to flushTimeout, for the reader to see its reply and
// every reply sent before it. A stream whose last request was a control ping that was answered
// (a dump read to its end, as binapi's dump clients end each dump with a ping) is owed nothing,
// and is not flushed: each such dump paid one more round trip to VPP.
func (s *stream) flush() {
	s.mu.Lock()
	owed := s.requestAfterPing || s.pingsSeen < s.pingsSent
	flushable := s.flushable && s.readErr == nil && owed
	s.mu.Unlock()
	if !flushable || s.SendMsg(&memclnt.ControlPing{}) != nil {
		return
	}
	deadline := time.NewTimer(flushTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		done := s.pingsSeen >= s.pingsSent || s.readErr != nil
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-s.pinged:
		case <-deadline.C:
			return
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
