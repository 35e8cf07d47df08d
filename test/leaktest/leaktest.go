// Package leaktest fails a package's tests when they leave goroutines running (go.uber.org/goleak,
// as the NSM sdk checks its own packages).
package leaktest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// settleTime is how long goroutines that are ending get to end: govpp's stats client, for one,
// waits up to 3 s for a removed stats socket before it sees that it was closed.
const settleTime = 10 * time.Second

// VerifyTestMain runs the package's tests, then fails if any goroutine they started still runs
// after settleTime, but for the known ones more names.
func VerifyTestMain(m *testing.M, known ...goleak.Option) {
	os.Exit(Run(m, known...))
}

// Run is VerifyTestMain for a TestMain with more to do before it exits: it returns the exit code.
func Run(m *testing.M, known ...goleak.Option) int {
	code := m.Run()
	if code == 0 {
		if err := Settle(known...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// Settle waits up to settleTime for the goroutines but the caller's (and the known ones) to end.
func Settle(known ...goleak.Option) error {
	deadline := time.Now().Add(settleTime)
	for {
		err := goleak.Find(known...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// VPPOutputScanner is the goroutine vpphelper leaves for each VPP it starts: it hands VPP a logrus
// writer that it never closes, whose scanner outlives VPP. The forwarder starts VPP once and exits
// when VPP does; packages whose tests start VPP as the forwarder does pass it to VerifyTestMain.
var VPPOutputScanner = goleak.IgnoreAnyFunction("github.com/sirupsen/logrus.(*Entry).writerScanner")

// GrpcfdQueuedSend is the goroutine grpcfd's SendFilename leaves when its connection closes with
// the descriptor still queued: it passes on the "connection closed" error, then reports its own
// second close of the file (see internal/transport/fdtransport) on a channel with room for one that sdk's
// sendfd looked at once and never reads again. Only the stand-ins the tests run for stock
// components (nsmgr, endpoints) use grpcfd; the forwarder's connections use internal/transport/fdtransport.
var GrpcfdQueuedSend = goleak.IgnoreTopFunction("github.com/edwarnicke/grpcfd.(*connWrap).SendFilename.func1")
