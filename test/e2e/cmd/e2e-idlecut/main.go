// Command e2e-idlecut stands in for a cloud load balancer or NAT in front of a TCP service: it
// relays every connection from -listen to -target and resets both sides of a connection that
// carried no byte in either direction for -idle, as such middleboxes drop idle flows (field
// report 4). Each cut is logged ("cut idle connection"), so a scenario can require that cuts
// happened. It runs until SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to accept connections on (host:port)")
	target := flag.String("target", "", "address to relay them to (host:port)")
	idle := flag.Duration("idle", 5*time.Second, "cut a connection silent in both directions for this long")
	flag.Parse()
	if *listen == "" || *target == "" || *idle <= 0 {
		fmt.Fprintln(os.Stderr, "usage: e2e-idlecut -listen host:port -target host:port [-idle 5s]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, *listen, *target, *idle); err != nil {
		log.Fatalf("e2e-idlecut: %v", err)
	}
}

func serve(ctx context.Context, listen, target string, idle time.Duration) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	log.Printf("relaying %s to %s, cutting connections idle for %s", listen, target, idle)
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, acceptErr := ln.Accept()
		if acceptErr != nil {
			if ctx.Err() != nil {
				return nil
			}
			return acceptErr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(ctx, conn.(*net.TCPConn), target, idle)
		}()
	}
}

// relay copies both ways until either side closes, ctx ends, or nothing moved for idle; then
// it resets both connections (SO_LINGER 0), as a middlebox that forgot the flow does.
func relay(ctx context.Context, client *net.TCPConn, target string, idle time.Duration) {
	dialer := net.Dialer{Timeout: 5 * time.Second}
	upstream, err := dialer.DialContext(ctx, "tcp", target)
	if err != nil {
		log.Printf("%s: dial %s: %v", client.RemoteAddr(), target, err)
		_ = client.SetLinger(0)
		_ = client.Close()
		return
	}
	server := upstream.(*net.TCPConn)
	var lastByte atomic.Int64
	lastByte.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	for _, pair := range [][2]*net.TCPConn{{client, server}, {server, client}} {
		go func(dst, src *net.TCPConn) {
			_, _ = io.Copy(dst, &touching{r: src, last: &lastByte})
			done <- struct{}{}
		}(pair[0], pair[1])
	}
	ticker := time.NewTicker(idle / 10)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			reset(client, server)
			return
		case <-done:
			_ = client.Close()
			_ = server.Close()
			return
		case <-ticker.C:
			silent := time.Since(time.Unix(0, lastByte.Load()))
			if silent >= idle {
				log.Printf("cut idle connection %s -> %s after %s of silence", client.RemoteAddr(), target, silent.Round(100*time.Millisecond))
				reset(client, server)
				return
			}
		}
	}
}

func reset(conns ...*net.TCPConn) {
	for _, c := range conns {
		_ = c.SetLinger(0)
		if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Printf("closing %s: %v", c.RemoteAddr(), err)
		}
	}
}

// touching records the time of every read that moved bytes.
type touching struct {
	r    io.Reader
	last *atomic.Int64
}

func (t *touching) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last.Store(time.Now().UnixNano())
	}
	return n, err
}
