package vppconn

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/govpp/binapi/memclnt"
)

// probeInterval paces the pings that show a dead API connection while nothing else calls VPP.
const probeInterval = 2 * time.Second

// watchLoss reports on lost the first sign that the API connection is gone for good: a write to
// VPP's socket that fails because VPP closed it or went away. govpp itself notices nothing (its
// reader stops at the socket's end without a word, and every later call fails), so the forwarder
// would sit with a dead connection; the pings make one show within probeInterval. A ping that only
// goes unanswered is a busy VPP, not a lost one. stop ends the watching and closes lost.
func watchLoss(conn api.Connection) (lost <-chan error, stop func()) {
	reports := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(reports)
		ticker := time.NewTicker(probeInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			pingCtx, cancelPing := context.WithTimeout(ctx, probeInterval)
			err := conn.Invoke(pingCtx, &memclnt.ControlPing{}, &memclnt.ControlPingReply{})
			cancelPing()
			if isGone(err) && ctx.Err() == nil {
				reports <- err
				return
			}
		}
	}()
	return reports, func() { cancel(); <-done }
}

func isGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, core.ErrNotConnected)
}
