package stats

import (
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Server hands the segment's memory file to every client that connects, as VPP's
// stats socket does, and hangs up.
type Server struct {
	listener *net.UnixListener
	wg       sync.WaitGroup
}

// Serve listens on path (replacing a stale socket) with SOCK_SEQPACKET.
func Serve(path string, seg *Segment) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	listener, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	s := &Server{listener: listener}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := listener.AcceptUnix()
			if err != nil {
				return
			}
			_, _, _ = conn.WriteMsgUnix([]byte{0}, unix.UnixRights(int(seg.File().Fd())), nil)
			_ = conn.Close()
		}
	}()
	return s, nil
}

// Close stops serving.
func (s *Server) Close() error {
	err := s.listener.Close()
	s.wg.Wait()
	return err
}
