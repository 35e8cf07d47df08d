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

// abandonedCloseTimeout bounds the Close of an abandoned next hop, which runs after the Request
// that abandoned it has returned.
const abandonedCloseTimeout = 15 * time.Second

// abandonedNextHop is the previous run's connection at the next hop when a returning connection
// now goes elsewhere, and nil when it does not: the same next hop's connection goes on, or the
// record cannot name it. sdk's begin closes the old next hop itself when a client reselects
// (RESELECT_REQUESTED), but only for a connection it established; after a restart it has none,
// and the old next hop would keep its side of the connection (a memif in a vl3 endpoint's VPP,
// say) until the connection expires there. The Close carries the path of the Request that came
// back up to this forwarder, whose tokens are current, and the recorded path after it.
func abandonedNextHop(previous, now *networkservice.Connection, index uint32) *networkservice.Connection {
	was, is := previous.GetPath().GetPathSegments(), now.GetPath().GetPathSegments()
	after := int(index) + 1
	if previous.GetNetworkServiceEndpointName() == "" || len(was) <= after || len(is) <= after ||
		was[index].GetId() != is[index].GetId() {
		return nil
	}
	for _, segment := range is {
		if segment.GetId() == was[after].GetId() {
			return nil
		}
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

// closeAbandonedNextHop closes the next hop rec's connection no longer goes to, if any, without
// holding up the Request: a next hop that is gone makes the Close fail, and its side goes when
// the connection expires there, as it would have without this forwarder's record.
func (c *restoreClient) closeAbandonedNextHop(ctx context.Context, previous, now *networkservice.Connection, index uint32) {
	closing := abandonedNextHop(previous, now, index)
	if closing == nil || c.closeNextHop == nil {
		return
	}
	logger := log.FromContext(ctx)
	logger.Infof("restore: connection %s no longer goes through %s (%s): closing it there",
		closing.GetId(), closing.GetPath().GetPathSegments()[index+1].GetName(), closing.GetNetworkServiceEndpointName())
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonedCloseTimeout)
	go func() {
		defer cancel()
		if err := c.closeNextHop(closeCtx, closing); err != nil {
			logger.Warnf("restore: closing connection %s at its previous next hop %s: %v; it goes when it expires there",
				closing.GetId(), closing.GetNetworkServiceEndpointName(), err)
		}
	}()
}
