package monitorretry

import (
	"context"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// errConnectionGone means the re-opened stream's initial state no longer holds the watched
// connection: the break hid a real loss, and the original error must be reported.
var errConnectionGone = errors.New("the watched connection is absent from the re-opened stream's initial state")

// resilientStream is a server-streaming MonitorConnections client stream that re-opens itself.
// Like any gRPC client stream it is received from by one goroutine at a time.
type resilientStream struct {
	grpc.ClientStream
	ctx           context.Context
	open          func(ctx context.Context) (grpc.ClientStream, error)
	options       *options
	selector      proto.Message
	cancelCurrent context.CancelFunc
}

func (s *resilientStream) SendMsg(m any) error {
	if selector, ok := m.(*networkservice.MonitorScopeSelector); ok {
		s.selector = proto.Clone(selector)
	}
	return s.ClientStream.SendMsg(m)
}

func (s *resilientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || s.ctx.Err() != nil || s.selector == nil || s.options.window <= 0 {
		return err
	}
	return s.reestablish(m, err)
}

// reestablish re-opens the stream until it delivers its initial state or the window closes. It
// returns the original cause when it gives up, so the caller reports exactly what it would have
// reported without retrying.
func (s *resilientStream) reestablish(m any, cause error) error {
	logger := log.FromContext(s.ctx).WithField("monitorretry", "reestablish")
	deadline := time.Now().Add(s.options.window)
	backoff := s.options.initialBackoff
	for attempt := 1; ; attempt++ {
		err := s.reopen(m, deadline)
		if err == nil {
			logger.Infof("MonitorConnections stream re-established after %d attempt(s); it broke with: %v", attempt, cause)
			return nil
		}
		if errors.Is(err, errConnectionGone) {
			logger.Warnf("%v; passing on the break: %v", err, cause)
			return cause
		}
		if s.ctx.Err() != nil || time.Until(deadline) < backoff {
			logger.Warnf("giving up after %d attempt(s) within %v; last error: %v", attempt, s.options.window, err)
			return cause
		}
		logger.Debugf("attempt %d failed: %v", attempt, err)
		select {
		case <-s.ctx.Done():
			return cause
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.options.maxBackoff)
	}
}

// reopen opens a new stream, re-sends the selector and receives the initial state into m. Opening
// and the first receive are bounded by deadline; the stream itself then lives as long as s.ctx.
func (s *resilientStream) reopen(m any, deadline time.Time) error {
	streamCtx, cancel := context.WithCancel(s.ctx)
	expired := time.AfterFunc(time.Until(deadline), cancel)
	stream, err := s.open(streamCtx)
	if err == nil {
		err = s.sendSelector(stream)
	}
	if err == nil {
		err = stream.RecvMsg(m)
	}
	if err == nil {
		err = checkInitialState(m)
	}
	if !expired.Stop() && err == nil {
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return err
	}
	if s.cancelCurrent != nil {
		s.cancelCurrent()
	}
	s.ClientStream, s.cancelCurrent = stream, cancel
	return nil
}

func (s *resilientStream) sendSelector(stream grpc.ClientStream) error {
	if err := stream.SendMsg(s.selector); err != nil {
		return err
	}
	return stream.CloseSend()
}

// checkInitialState rejects an initial state transfer that does not hold the watched connection:
// the monitor server filters by the selector, so an empty transfer means the next hop forgot it.
func checkInitialState(m any) error {
	event, ok := m.(*networkservice.ConnectionEvent)
	if !ok || event.GetType() != networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER {
		return nil
	}
	if len(event.GetConnections()) == 0 {
		return errConnectionGone
	}
	return nil
}
