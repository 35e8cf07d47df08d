package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/connfile"
)

// closeLastOnSignal closes the client's last open connection on each SIGUSR1, until ctx ends:
// one connection of several closed while the others stay (the harness's Client.CloseLast),
// which a pod with two network services sees when one is removed from its annotation.
func closeLastOnSignal(ctx context.Context, nsmClient networkservice.NetworkServiceClient, paced *pacedRefresh, record *connfile.Recorder, timeout time.Duration) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	defer signal.Stop(signals)
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
		}
		conn := paced.removeLast()
		if conn == nil {
			log.FromContext(ctx).Errorf("SIGUSR1: no connection left to close")
			continue
		}
		closeCtx, cancel := context.WithTimeout(ctx, timeout)
		_, err := nsmClient.Close(closeCtx, conn)
		cancel()
		if err != nil {
			log.FromContext(ctx).Errorf("SIGUSR1: close %s: %v", conn.GetId(), err)
			continue
		}
		if record != nil {
			if err = record.Forget(conn.GetId()); err != nil {
				log.FromContext(ctx).Errorf("SIGUSR1: rewriting the connection file: %v", err)
				continue
			}
		}
		log.FromContext(ctx).Infof("SIGUSR1: closed %s", conn.GetId())
	}
}

// removeLast removes the last connection and returns it as last granted, or nil when none is
// left.
func (p *pacedRefresh) removeLast() *networkservice.Connection {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return nil
	}
	last := p.requests[len(p.requests)-1]
	p.requests = p.requests[:len(p.requests)-1]
	return last.GetConnection()
}
