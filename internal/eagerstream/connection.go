package eagerstream

import (
	"context"
	"errors"
	"sync"

	"go.fd.io/govpp/api"
)

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
	readCtx, stopReading := context.WithCancel(ctx)
	inner, err := c.Connection.NewStream(readCtx, options...)
	if err != nil {
		stopReading()
		return nil, err
	}
	return &stream{inner: inner, ctx: ctx, stopReading: stopReading, arrived: make(chan struct{}, 1), readerDone: make(chan struct{})}, nil
}

// stream reads inner from its first SendMsg on (govpp resolves a reply's type by the package of
// the last message sent, which SendMsg records only once the message is out) until it is closed.
type stream struct {
	inner       api.Stream
	ctx         context.Context
	stopReading context.CancelFunc
	readerDone  chan struct{}
	arrived     chan struct{}

	mu      sync.Mutex
	started bool
	queue   []api.Message
	readErr error
	closed  bool
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
		}
		s.mu.Unlock()
		select {
		case s.arrived <- struct{}{}:
		default:
		}
		if err != nil {
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

// Close stops the reading before it closes the inner stream: govpp hands a closed stream's channel
// to the next stream, whose replies the reader must not take.
func (s *stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	s.stopReading()
	if started {
		<-s.readerDone
	}
	return s.inner.Close()
}
