// Package grpctransporttest holds test helpers for the forwarder's gRPC transport: a TCP relay
// that cuts idle flows as cloud load balancers and NAT gateways do (field report 4).
package grpctransporttest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// IdleCutter is a TCP relay that closes a flow when no byte crossed it for cutAfter. Every
// accepted flow gets a fresh connection to the target, as through a real middlebox.
type IdleCutter struct {
	// Address is where clients connect instead of the target.
	Address string
	cuts    atomic.Int32
}

// StartIdleCutter relays to target until the test ends.
func StartIdleCutter(t *testing.T, target string, cutAfter time.Duration) *IdleCutter {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	cutter := &IdleCutter{Address: listener.Addr().String()}
	go func() {
		for {
			client, acceptErr := listener.Accept()
			if acceptErr != nil {
				return
			}
			server, dialErr := net.Dial("tcp", target)
			if dialErr != nil {
				_ = client.Close()
				continue
			}
			go cutter.relay(client, server, cutAfter)
		}
	}()
	return cutter
}

// Cuts is how many flows the cutter has closed for idleness.
func (c *IdleCutter) Cuts() int32 { return c.cuts.Load() }

func (c *IdleCutter) relay(client, server net.Conn, cutAfter time.Duration) {
	var lastActivity atomic.Int64
	lastActivity.Store(time.Now().UnixNano())
	var once sync.Once
	closed := make(chan struct{})
	closeBoth := func() { once.Do(func() { _ = client.Close(); _ = server.Close(); close(closed) }) }
	copyAndMark := func(dst, src net.Conn) {
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				lastActivity.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		closeBoth()
	}
	go copyAndMark(server, client)
	go copyAndMark(client, server)
	ticker := time.NewTicker(min(500*time.Millisecond, cutAfter/4))
	defer ticker.Stop()
	for {
		select {
		case <-closed:
			return
		case <-ticker.C:
			if time.Since(time.Unix(0, lastActivity.Load())) > cutAfter {
				c.cuts.Add(1)
				closeBoth()
				return
			}
		}
	}
}
