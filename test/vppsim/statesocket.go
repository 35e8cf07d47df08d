package vppsim

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// stateServer answers every connection on its socket with one JSON Snapshot.
type stateServer struct {
	listener *net.UnixListener
	wg       sync.WaitGroup
}

func serveState(path string, snapshot func() *Snapshot, log *slog.Logger) (*stateServer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	s := &stateServer{listener: listener}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := json.NewEncoder(conn).Encode(snapshot()); err != nil {
				log.Debug("writing state snapshot", "error", err)
			}
			_ = conn.Close()
		}
	}()
	return s, nil
}

func (s *stateServer) close() {
	_ = s.listener.Close()
	s.wg.Wait()
}

// ReadState fetches a Snapshot from a simulator's state socket.
func ReadState(path string) (*Snapshot, error) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	data, err := io.ReadAll(conn)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{}
	if err := json.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("decoding state from %s: %w", path, err)
	}
	return snap, nil
}
