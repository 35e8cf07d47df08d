package vppconn

import (
	"context"
	"errors"
	"os"
	"time"

	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
)

// answerBound is how long a VPP that created its API socket gets to answer its version. VPP
// creates that socket from its main loop, after every init and config function (DPDK's included),
// in the process that then serves it (vl_api_clnt_process, VPP v24.10), so a healthy VPP answers
// at once; the bound leaves room for a loaded machine. (A variable, for the test that waits for it
// three times.)
var answerBound = 10 * time.Second

// socketPoll paces the look for VPP's API socket.
const socketPoll = 50 * time.Millisecond

// checkClock fails with a vppclock.Misstart for a VPP to start again. An answer without the time
// is no reason to end a VPP: start-up's own check warns about it.
func checkClock(ctx context.Context, conn api.Connection) error {
	if err := vppclock.CheckStarted(ctx, conn); !errors.Is(err, vppclock.ErrUnreadable) {
		return err
	}
	return nil
}

// silentSince closes once socket, created at since or later, has existed for bound. A socket left
// by an earlier run does not count.
func silentSince(ctx context.Context, socket string, since time.Time, bound time.Duration) <-chan struct{} {
	silent := make(chan struct{})
	go func() {
		for {
			if info, err := os.Stat(socket); err == nil && !info.ModTime().Before(since.Truncate(time.Second)) {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(socketPoll):
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(bound):
			close(silent)
		}
	}()
	return silent
}
