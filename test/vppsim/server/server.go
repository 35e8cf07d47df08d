package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/networkservicemesh/govpp/binapi/memclnt"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// Handler carries out the messages the transport does not answer itself.
type Handler interface {
	// Handle returns the messages to send back in order (one reply, or the details of a
	// dump). handled is false when the simulator does not implement the message.
	Handle(s *Session, req api.Message) (replies []api.Message, handled bool)
	// SessionClosed drops whatever the handler keeps for a client that went away.
	SessionClosed(s *Session)
}

// Server accepts govpp socketclient connections on a unix socket.
type Server struct {
	table    *MessageTable
	handler  Handler
	log      *slog.Logger
	listener *net.UnixListener

	mu        sync.Mutex
	sessions  map[*Session]struct{}
	nextIndex uint32
	closed    bool
	wg        sync.WaitGroup
}

// Listen binds path (replacing a stale socket file left by a killed simulator) and starts
// serving clients in the background.
func Listen(path string, table *MessageTable, handler Handler, log *slog.Logger) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	s := &Server{
		table:     table,
		handler:   handler,
		log:       log,
		listener:  listener,
		sessions:  make(map[*Session]struct{}),
		nextIndex: 1,
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Close stops accepting, disconnects every client and waits for their loops to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	err := s.listener.Close()
	for _, sess := range sessions {
		_ = sess.conn.Close()
	}
	s.wg.Wait()
	return err
}

// Sessions lists the connected clients (name and index), ordered by index.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	infos := make([]SessionInfo, 0, len(s.sessions))
	for sess := range s.sessions {
		infos = append(infos, SessionInfo{Index: sess.Index, Name: sess.Name})
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Index < infos[j].Index })
	return infos
}

// SessionInfo describes one connected API client.
type SessionInfo struct {
	Index uint32 `json:"index"`
	Name  string `json:"name"`
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		sess := newSession(s.nextIndex, conn, s.table)
		s.nextIndex++
		s.sessions[sess] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(sess)
	}
}

func (s *Server) serve(sess *Session) {
	defer s.wg.Done()
	defer func() {
		s.handler.SessionClosed(sess)
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		sess.end()
	}()
	for {
		data, err := readFrame(sess.conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("client read failed", "client", sess.Index, "error", err)
			}
			return
		}
		if !s.dispatch(sess, data) {
			return
		}
	}
}

// dispatch answers one message; it returns false when the session must end.
func (s *Server) dispatch(sess *Session, data []byte) bool {
	if len(data) < 2 {
		s.log.Warn("dropping runt message", "client", sess.Index, "bytes", len(data))
		return true
	}
	id := uint16(data[0])<<8 | uint16(data[1])
	req, known := s.table.New(id)
	if !known {
		ctx := requestContext(data, api.RequestMessage)
		s.log.Warn("unknown message id, answering control_ping_reply with UNIMPLEMENTED", "client", sess.Index, "msg_id", id)
		return sess.Send(&memclnt.ControlPingReply{Retval: int32(api.UNIMPLEMENTED)}, ctx) == nil
	}
	ctx := requestContext(data, req.GetMessageType())
	if err := codec.DefaultCodec.DecodeMsg(data, req); err != nil {
		s.log.Warn("undecodable message", "client", sess.Index, "msg", req.GetMessageName(), "error", err)
		return s.replyError(sess, req.GetMessageName(), ctx, api.INVALID_VALUE)
	}
	switch m := req.(type) {
	case *memclnt.SockclntCreate:
		s.mu.Lock() // Sessions() reads names under the same lock
		sess.Name = m.Name
		s.mu.Unlock()
		return sess.Send(s.handshakeReply(sess), ctx) == nil
	case *memclnt.SockclntDelete:
		_ = sess.Send(&memclnt.SockclntDeleteReply{}, ctx)
		return false
	case *memclnt.ControlPing:
		return sess.Send(&memclnt.ControlPingReply{ClientIndex: sess.Index, VpePID: uint32(os.Getpid())}, ctx) == nil
	case *memclnt.MemclntKeepaliveReply:
		return true
	}
	replies, handled, panicked := s.handle(sess, req)
	if panicked {
		return s.replyError(sess, req.GetMessageName(), ctx, api.UNSPECIFIED)
	}
	if !handled {
		s.log.Warn("unimplemented message", "client", sess.Index, "msg", req.GetMessageName())
		return s.replyError(sess, req.GetMessageName(), ctx, api.UNIMPLEMENTED)
	}
	for _, reply := range replies {
		if err := sess.Send(reply, ctx); err != nil {
			return false
		}
	}
	return true
}

// handle runs the handler, turning a panic into a logged failure of this one message so a
// simulator bug never takes the whole VPP (and every waiting client) down.
func (s *Server) handle(sess *Session, req api.Message) (replies []api.Message, handled, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", "client", sess.Index, "msg", req.GetMessageName(), "panic", r)
			replies, handled, panicked = nil, true, true
		}
	}()
	replies, handled = s.handler.Handle(sess, req)
	return replies, handled, false
}

// replyError sends the request's own reply type with retval set, so govpp surfaces a
// VPPApiError; a dump gets no details, and the caller's control_ping ends it.
func (s *Server) replyError(sess *Session, requestName string, ctx uint32, code api.VPPApiError) bool {
	reply, ok := s.table.ReplyTo(requestName)
	if !ok {
		return true
	}
	SetRetval(reply, int32(code))
	return sess.Send(reply, ctx) == nil
}

func (s *Server) handshakeReply(sess *Session) *memclnt.SockclntCreateReply {
	entries := s.table.Entries()
	reply := &memclnt.SockclntCreateReply{
		Index:        sess.Index,
		Count:        uint16(len(entries)),
		MessageTable: make([]memclnt.MessageTableEntry, 0, len(entries)),
	}
	for name, id := range entries {
		reply.MessageTable = append(reply.MessageTable, memclnt.MessageTableEntry{Index: id, Name: name})
	}
	sort.Slice(reply.MessageTable, func(i, j int) bool { return reply.MessageTable[i].Index < reply.MessageTable[j].Index })
	return reply
}
