package vppclock

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/networkservicemesh/govpp/binapi/vlib"
	"go.fd.io/govpp/api"
)

const (
	// Tolerance is how much faster or slower than the kernel's VPP's clock may run. A misread
	// start-up estimate is off by the stall over one millisecond: tens to thousands of times.
	Tolerance = 1.25
	// sampleGap separates the two readings; the gap must dwarf API latency for a 25% difference
	// to show.
	sampleGap = 100 * time.Millisecond
)

// ErrUnreadable says VPP answered `show clock` with something that holds no "Time now": a VPP
// whose CLI differs from v24.10's, whose clock Check cannot tell.
var ErrUnreadable = errors.New(`no "Time now" in VPP's answer to show clock`)

// Error says VPP's clock runs at Rate kernel seconds per second.
type Error struct {
	// Rate is VPP's seconds per kernel second, as measured (1 is right).
	Rate float64
}

func (e *Error) Error() string {
	return fmt.Sprintf("VPP's clock runs at %.3g times the kernel's: VPP misread its CPU clock frequency at start-up and must be restarted", e.Rate)
}

// Check reads VPP's clock twice, sampleGap apart, and returns an *Error when it ran more than
// Tolerance times faster or slower than the kernel's over that gap. Other errors say VPP did
// not answer `show clock`, or answered what holds no time (ErrUnreadable).
func Check(ctx context.Context, conn api.Connection) error {
	first, err := read(ctx, conn)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(sampleGap):
	}
	second, err := read(ctx, conn)
	if err != nil {
		return err
	}
	return compare(first, second)
}

// reading is VPP's time, read between asked and answered by the kernel's.
type reading struct {
	vppSeconds      float64
	asked, answered time.Time
}

var timeNow = regexp.MustCompile(`Time now ([0-9]*\.[0-9]+)`)

func read(ctx context.Context, conn api.Connection) (reading, error) {
	r := reading{asked: time.Now()}
	reply := &vlib.CliInbandReply{}
	if err := conn.Invoke(ctx, &vlib.CliInband{Cmd: "show clock"}, reply); err != nil {
		return r, fmt.Errorf("reading VPP's clock (show clock): %w", err)
	}
	r.answered = time.Now()
	var err error
	r.vppSeconds, err = parseTimeNow(reply.Reply)
	return r, err
}

// parseTimeNow reads VPP's seconds since start-up from the answer to `show clock`: "Time now
// .695586, Tue, 01 Dec 2026 04:08:05 GMT" (no leading zero below one second).
func parseTimeNow(answer string) (float64, error) {
	match := timeNow.FindStringSubmatch(answer)
	if match == nil {
		return 0, fmt.Errorf("reading VPP's clock: %w: %q", ErrUnreadable, answer)
	}
	return strconv.ParseFloat(match[1], 64)
}

// compare bounds the kernel's time between VPP's two readings: at least from the first answer
// to the second question, at most from the first question to the second answer.
func compare(first, second reading) error {
	vppElapsed := second.vppSeconds - first.vppSeconds
	least := second.asked.Sub(first.answered).Seconds()
	most := second.answered.Sub(first.asked).Seconds()
	if vppElapsed <= most*Tolerance && vppElapsed >= least/Tolerance {
		return nil
	}
	return &Error{Rate: vppElapsed / ((least + most) / 2)}
}
