package expiry

import (
	"context"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clock"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/fwdmetrics"
)

// releaseTimeout bounds the Close the element issues itself.
const releaseTimeout = time.Minute

// disarm stops the connection's timer. Call with state locked.
func (s *expiryServer) disarm(state *connState) {
	if state.cancelTimer != nil {
		state.cancelTimer()
		state.cancelTimer = nil
	}
	state.generation++
	s.setArmed(state, false)
}

// arm (re)starts the timer for the expiry the previous hop granted. Call with state locked. The
// Close it may fire later carries the values of this Request's context (chain position, per
// connection metadata, clock) but not its cancellation.
func (s *expiryServer) arm(ctx context.Context, id string, state *connState, conn *networkservice.Connection) {
	s.disarm(state)
	expires := conn.GetPrevPathSegment().GetExpires()
	if expires == nil {
		return
	}
	timeClock := clock.FromContext(ctx)
	timerCtx, cancel := context.WithCancel(s.chainCtx)
	state.cancelTimer = cancel
	s.setArmed(state, true)

	fired := timeClock.After(timeClock.Until(expires.AsTime()) + s.options.gracePeriod)
	closeCtx := context.WithoutCancel(ctx)
	generation := state.generation
	conn = conn.Clone()
	go func() {
		select {
		case <-timerCtx.Done():
			return
		case <-fired:
		}
		s.expire(closeCtx, id, state, generation, conn)
	}()
}

// expire releases the data plane of a connection whose regular Close never reached this element.
func (s *expiryServer) expire(closeCtx context.Context, id string, armedState *connState, generation uint64, conn *networkservice.Connection) {
	state := s.lock(id)
	defer s.unlock(id, state)
	if state != armedState || state.generation != generation {
		return
	}
	s.disarm(state)

	ctx, cancel := clock.FromContext(closeCtx).WithTimeout(closeCtx, releaseTimeout)
	defer cancel()
	logger := log.FromContext(ctx).WithField("expiry", "release")
	logger.Warnf("connection %s expired and no Close reached the data plane: releasing it", id)
	fwdmetrics.ExpiryRelease(ctx, fwdmetrics.ExpiryToken)
	if _, err := next.Server(ctx).Close(ctx, conn); err != nil {
		logger.Errorf("releasing expired connection %s: %v", id, err)
	}
}
