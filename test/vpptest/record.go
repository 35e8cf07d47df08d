package vpptest

import (
	"context"
	"sync"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"
)

// recorder keeps every request sent over a VPP's recorded connections, whatever VPP answered.
type recorder struct {
	mu       sync.Mutex
	requests []api.Message
}

func (r *recorder) add(msg api.Message) {
	if msg.GetMessageName() == "control_ping" {
		return // the transport's own, after every dump
	}
	r.mu.Lock()
	r.requests = append(r.requests, msg)
	r.mu.Unlock()
}

func (r *recorder) list() []api.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Message(nil), r.requests...)
}

// Conn is an API connection whose requests are recorded: an api.Connection for the forwarder
// and sdk-vpp's elements.
type Conn struct {
	*core.Connection
	recorder *recorder
	hookMu   sync.Mutex
	hook     func(api.Message)
}

// BeforeEachRequest has hook called with every request this connection is about to send, before
// it is sent: what a test sees there is what was true just before VPP acted on it.
func (c *Conn) BeforeEachRequest(hook func(api.Message)) {
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	c.hook = hook
}

// Invoke records req and sends it.
func (c *Conn) Invoke(ctx context.Context, req, reply api.Message) error {
	c.recorder.add(req)
	c.hookMu.Lock()
	hook := c.hook
	c.hookMu.Unlock()
	if hook != nil {
		hook(req)
	}
	return c.Connection.Invoke(ctx, req, reply)
}

// NewStream opens a stream whose sent messages are recorded.
func (c *Conn) NewStream(ctx context.Context, options ...api.StreamOption) (api.Stream, error) {
	stream, err := c.Connection.NewStream(ctx, options...)
	if err != nil {
		return nil, err
	}
	return &recordedStream{Stream: stream, recorder: c.recorder}, nil
}

type recordedStream struct {
	api.Stream
	recorder *recorder
}

func (s *recordedStream) SendMsg(msg api.Message) error {
	s.recorder.add(msg)
	return s.Stream.SendMsg(msg)
}

var _ api.Connection = (*Conn)(nil)
