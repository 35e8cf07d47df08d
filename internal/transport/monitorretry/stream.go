package monitorretry

import (
	"context"
	"sync"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

// Why a break is passed on although the peer may have answered.
var (
	errConnectionGone  = errors.New("the next hop's initial state no longer holds the watched connection")
	errConnectionDown  = errors.New("the next hop's initial state holds the watched connection DOWN")
	errUnregistered    = errors.New("the watched connection's endpoint is no longer registered")
	errReopenTimedOut  = errors.New("the next hop did not answer the re-opened stream in time")
	errNothingToReopen = errors.New("no selector was sent on the broken stream")
)

// resilientStream is a server-streaming MonitorConnections client stream that re-opens itself
// once per break. Like any gRPC client stream it is received from by one goroutine at a time.
type resilientStream struct {
	grpc.ClientStream
	ctx           context.Context
	open          func(ctx context.Context) (grpc.ClientStream, error)
	options       *options
	selector      proto.Message
	endpointName  string
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
	if err == nil {
		s.rememberEndpoint(m)
		return nil
	}
	if s.ctx.Err() != nil {
		return err
	}
	if s.options.reopenTimeout <= 0 {
		fwdmetrics.MonitorBreak(s.ctx, fwdmetrics.MonitorReportedDown)
		return err
	}
	return s.reestablish(m, err)
}

// rememberEndpoint keeps the name of the endpoint at the end of the watched connection, for the
// registry lookup during a later re-open.
func (s *resilientStream) rememberEndpoint(m any) {
	event, ok := m.(*networkservice.ConnectionEvent)
	if !ok {
		return
	}
	for _, conn := range event.GetConnections() {
		if name := conn.GetNetworkServiceEndpointName(); name != "" {
			s.endpointName = name
		}
	}
}

// reestablish makes one bounded attempt to re-open the stream. It returns nil once the new stream
// delivered an initial state that still holds the connection (m then holds it), and the original
// cause otherwise, so that the caller reports exactly what it would have without re-opening.
func (s *resilientStream) reestablish(m any, cause error) error {
	logger := log.FromContext(s.ctx).WithField("monitorretry", "reestablish")
	start := time.Now()
	if err := s.reopen(m); err != nil {
		logger.Warnf("passing on the break after %v (%v): %v", time.Since(start).Round(time.Millisecond), err, cause)
		fwdmetrics.MonitorBreak(s.ctx, fwdmetrics.MonitorReportedDown)
		return cause
	}
	fwdmetrics.MonitorBreak(s.ctx, fwdmetrics.MonitorResubscribed)
	logger.Infof("MonitorConnections stream re-established in %v; it broke with: %v", time.Since(start).Round(time.Millisecond), cause)
	s.rememberEndpoint(m)
	return nil
}

// reopen opens a new stream that fails fast instead of waiting for the peer to become ready,
// re-sends the selector and receives the initial state into m, while the endpoint lookup runs
// beside it. Either a verdict of the lookup or the re-open timeout cuts the attempt short; a
// stream that made it lives on as long as s.ctx.
func (s *resilientStream) reopen(m any) error {
	if s.selector == nil {
		return errNothingToReopen
	}
	streamCtx, cancelStream := context.WithCancel(s.ctx)
	a := &attempt{cancel: cancelStream}
	timer := time.AfterFunc(s.options.reopenTimeout, func() { a.abort(errReopenTimedOut) })
	// The lookup is left to finish within the same bound even when the re-open is done first: its
	// answer no longer counts then, but cutting its registry call short only fills the log.
	go s.lookUpEndpoint(a, s.endpointName)

	stream, err := s.receiveInitialState(streamCtx, m)
	timer.Stop()
	if aborted := a.finish(); aborted != nil {
		err = aborted
	}
	if err != nil {
		cancelStream()
		return err
	}
	if s.cancelCurrent != nil {
		s.cancelCurrent()
	}
	s.ClientStream, s.cancelCurrent = stream, cancelStream
	return nil
}

func (s *resilientStream) receiveInitialState(streamCtx context.Context, m any) (grpc.ClientStream, error) {
	stream, err := s.open(streamCtx)
	if err != nil {
		return nil, err
	}
	if err = stream.SendMsg(s.selector); err != nil {
		return nil, err
	}
	if err = stream.CloseSend(); err != nil {
		return nil, err
	}
	if err = stream.RecvMsg(m); err != nil {
		return nil, err
	}
	return stream, checkInitialState(m)
}

func (s *resilientStream) lookUpEndpoint(a *attempt, endpointName string) {
	if s.options.endpointLookup == nil || endpointName == "" {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.options.reopenTimeout)
	defer cancel()
	registered, err := s.options.endpointLookup(ctx, endpointName)
	if err == nil && !registered {
		a.abort(errors.Wrapf(errUnregistered, "endpoint %s", endpointName))
	}
}

// attempt is one re-open that the lookup or the timeout may cut short until it finishes.
type attempt struct {
	mu       sync.Mutex
	finished bool
	aborted  error
	cancel   context.CancelFunc
}

func (a *attempt) abort(reason error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.finished && a.aborted == nil {
		a.aborted = reason
		a.cancel()
	}
}

// finish ends the attempt and returns why it was cut short, if it was.
func (a *attempt) finish() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finished = true
	return a.aborted
}

// checkInitialState rejects an initial state transfer that does not hold the watched connection
// alive: the monitor server filters by the selector, so an empty transfer means the next hop
// forgot the connection, and a DOWN one that it knows it lost.
func checkInitialState(m any) error {
	event, ok := m.(*networkservice.ConnectionEvent)
	if !ok || event.GetType() != networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER {
		return nil
	}
	if len(event.GetConnections()) == 0 {
		return errConnectionGone
	}
	for _, conn := range event.GetConnections() {
		if conn.GetState() != networkservice.State_DOWN {
			return nil
		}
	}
	return errConnectionDown
}
