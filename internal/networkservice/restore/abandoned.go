package restore

import (
	"context"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// NextHopCloser sends conn's Close to the hop after this forwarder's: conn is as this forwarder's
// client side sends it (the path's index at this forwarder's segment), its endpoint named.
type NextHopCloser func(ctx context.Context, conn *networkservice.Connection) error

// nextHopCloseTimeout bounds a Close sent to a previous run's next hop, which runs after the
// Request or Close that called for it has returned.
const nextHopCloseTimeout = 15 * time.Second

// recordedNextHop is the Close of the previous run's connection at its next hop: now's path up to
// this forwarder (index), whose tokens are current, then the recorded segments after it. nil when
// the record cannot name that hop, or now is another hop of this forwarder.
func recordedNextHop(previous, now *networkservice.Connection, index uint32) *networkservice.Connection {
	was, is := previous.GetPath().GetPathSegments(), now.GetPath().GetPathSegments()
	after := int(index) + 1
	if previous.GetNetworkServiceEndpointName() == "" || len(was) <= after || len(is) < after ||
		was[index].GetId() != is[index].GetId() {
		return nil
	}
	closing := previous.Clone()
	closing.Id = is[index].GetId()
	closing.Path = &networkservice.Path{Index: index}
	for _, segment := range is[:after] {
		closing.Path.PathSegments = append(closing.Path.PathSegments, segment.Clone())
	}
	for _, segment := range was[after:] {
		closing.Path.PathSegments = append(closing.Path.PathSegments, segment.Clone())
	}
	return closing
}

// abandonedNextHop is recordedNextHop when a returning connection now goes elsewhere: the next
// hop's answer no longer holds the recorded next hop's segment. sdk's begin closes the old next hop
// itself when a client reselects (RESELECT_REQUESTED), but only for a connection it established;
// after a restart it has none, and the old next hop would keep its side (a memif in a vl3
// endpoint's VPP, say) until the connection expires there.
func abandonedNextHop(previous, now *networkservice.Connection, index uint32) *networkservice.Connection {
	was, is := previous.GetPath().GetPathSegments(), now.GetPath().GetPathSegments()
	if len(was) <= int(index)+1 || len(is) <= int(index)+1 {
		return nil
	}
	for _, segment := range is {
		if segment.GetId() == was[index+1].GetId() {
			return nil
		}
	}
	return recordedNextHop(previous, now, index)
}

// closeNextHopOf sends closing to its next hop, if there is one to send and a closer, without
// holding up the caller: a next hop that is gone makes the Close fail, and its side goes when the
// connection expires there, as it would have without this forwarder's record.
func (l *Leftovers) closeNextHopOf(ctx context.Context, closing *networkservice.Connection) {
	l.mu.Lock()
	closeNextHop := l.closeNextHop
	l.mu.Unlock()
	if closing == nil || closeNextHop == nil {
		return
	}
	logger := log.FromContext(ctx)
	index := closing.GetPath().GetIndex()
	logger.Infof("restore: connection %s: closing the previous run's side of it at %s (endpoint %s)",
		closing.GetId(), closing.GetPath().GetPathSegments()[index+1].GetName(), closing.GetNetworkServiceEndpointName())
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nextHopCloseTimeout)
	go func() {
		defer cancel()
		if err := closeNextHop(closeCtx, closing); err != nil {
			logger.Warnf("restore: connection %s: closing the previous run's side of it at endpoint %s: %v; it goes when it expires there",
				closing.GetId(), closing.GetNetworkServiceEndpointName(), err)
		}
	}()
}
