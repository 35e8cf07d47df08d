package vppclock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.fd.io/govpp/api"
)

// StartBound bounds CheckStarted. A healthy VPP answers `show clock` in milliseconds, within
// StartBound even on a loaded machine; one that misread its clock may never answer.
const StartBound = 5 * time.Second

// Misstart is a VPP that misread its clock at start-up: its clock runs off the kernel's pace, or
// it does not answer. Only another run of VPP mends it.
type Misstart struct{ Err error }

func (m Misstart) Error() string { return m.Err.Error() }

func (m Misstart) Unwrap() error { return m.Err }

// Misstarted says whether err holds a Misstart.
func Misstarted(err error) bool {
	return errors.As(err, new(Misstart))
}

// CheckStarted checks the clock of a VPP that has just started, within StartBound. It fails with
// a Misstart when VPP's clock runs off the kernel's pace or VPP does not answer in time, and with
// ErrUnreadable when its answer holds no time: a VPP the check cannot tell about, which another
// run would not mend.
func CheckStarted(ctx context.Context, conn api.Connection) error {
	checkCtx, cancel := context.WithTimeout(ctx, StartBound)
	defer cancel()
	err := Check(checkCtx, conn)
	var offPace *Error
	switch {
	case errors.As(err, &offPace):
		return Misstart{err}
	case err != nil && ctx.Err() == nil && errors.Is(checkCtx.Err(), context.DeadlineExceeded):
		return Misstart{fmt.Errorf("no answer to show clock within %s, as a VPP that misread its clock at start-up does: %w", StartBound, err)}
	}
	return err
}
