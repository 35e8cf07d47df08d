package expiry

import (
	"context"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clock"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

// releaseTimeout bounds each Close the element issues itself.
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
	s.schedule(ctx, id, state, conn, timeClock.Until(expires.AsTime())+s.options.gracePeriod, 0)
}

// schedule starts the timer of a release attempt (0 is the one at expiry, then its retries), which
// a later Request or Close of the connection stops. Call with state locked.
func (s *expiryServer) schedule(ctx context.Context, id string, state *connState, conn *networkservice.Connection, after time.Duration, attempt int) {
	timerCtx, cancel := context.WithCancel(s.chainCtx)
	state.cancelTimer = cancel
	s.setArmed(state, true)
	fired := clock.FromContext(ctx).After(after)
	closeCtx := context.WithoutCancel(ctx)
	generation := state.generation
	conn = conn.Clone()
	go func() {
		select {
		case <-timerCtx.Done():
			return
		case <-fired:
		}
		s.release(closeCtx, id, state, generation, conn, attempt)
	}()
}

// release closes the rest of the chain for a connection whose regular Close never reached this
// element, or failed. A failed attempt is tried again with backoff until one succeeds, the
// connection is known released (see WithReleased), or a Request or Close of it comes first.
func (s *expiryServer) release(closeCtx context.Context, id string, armedState *connState, generation uint64, conn *networkservice.Connection, attempt int) {
	state := s.lock(id)
	defer s.unlock(id, state)
	if state != armedState || state.generation != generation {
		return
	}
	s.disarm(state)
	logger := log.FromContext(closeCtx).WithField("expiry", "release")
	switch {
	case attempt == 0:
		logger.Warnf("connection %s expired and no Close reached the data plane: releasing it", id)
		fwdmetrics.ExpiryRelease(closeCtx, fwdmetrics.ExpiryToken)
	case s.options.released(id):
		logger.Infof("connection %s was released by its record meanwhile", id)
		return
	}
	err := s.close(closeCtx, conn, attempt)
	switch {
	case err == nil && attempt > 0:
		logger.Infof("connection %s released after %d retries", id, attempt)
	case err == nil:
	case s.options.released(id):
		logger.Infof("connection %s: the Close failed (%v), but its record-based release succeeded", id, err)
	default:
		delay := s.options.retryDelay(attempt)
		logger.Errorf("releasing connection %s failed, next try in %s: %v", id, delay, err)
		s.schedule(closeCtx, id, state, conn, delay, attempt+1)
	}
}

// close runs one attempt. Only the first carries the peer's descriptor channel: it lets recvfd map
// the namespace to the descriptor it still holds from the Request. Any Close drops those
// descriptors, and a peer that is gone can send none, so a retry that waited for one would never
// reach the elements that release, nor the journal, which releases by recorded identity.
func (s *expiryServer) close(closeCtx context.Context, conn *networkservice.Connection, attempt int) error {
	if attempt > 0 {
		closeCtx = withoutDescriptors(closeCtx)
	}
	ctx, cancel := clock.FromContext(closeCtx).WithTimeout(closeCtx, releaseTimeout)
	defer cancel()
	_, err := next.Server(ctx).Close(ctx, conn.Clone())
	return err
}
