package main

import (
	"context"
	"sync"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// pacedRefresh refreshes each of the client's connections once, one after another, spacing apart,
// the first after delay: the load benchmark sets NSM_REFRESH_AFTER and NSM_REFRESH_SPACING so that
// all clients together refresh at a rate it chooses, instead of at the rate their first Requests
// were granted, which is as fast as the domain can serve and so puts the refreshes at the edge of
// saturation. The sdk's own refresh is off in this mode; healing is not.
type pacedRefresh struct {
	client networkservice.NetworkServiceClient
	delay  time.Duration
	// spacing is the time between two refreshes of this client.
	spacing time.Duration
	timeout time.Duration

	mu       sync.Mutex
	requests []*networkservice.NetworkServiceRequest
}

// add is a granted connection and the request that asked for it.
func (p *pacedRefresh) add(request *networkservice.NetworkServiceRequest, conn *networkservice.Connection) {
	p.mu.Lock()
	defer p.mu.Unlock()
	request = request.Clone()
	request.Connection = conn.Clone()
	p.requests = append(p.requests, request)
}

// connections are the connections as last granted, for closing them.
func (p *pacedRefresh) connections() []*networkservice.Connection {
	p.mu.Lock()
	defer p.mu.Unlock()
	conns := make([]*networkservice.Connection, 0, len(p.requests))
	for _, r := range p.requests {
		conns = append(conns, r.GetConnection())
	}
	return conns
}

// run refreshes every connection once, until ctx ends; a failed refresh is logged and left to
// the connection's expiry or heal, as a failed sdk refresh is.
func (p *pacedRefresh) run(ctx context.Context) {
	next := time.Now().Add(p.delay)
	for i := range p.connections() {
		select {
		case <-time.After(time.Until(next)):
		case <-ctx.Done():
			return
		}
		next = next.Add(p.spacing)
		p.mu.Lock()
		request := p.requests[i].Clone()
		p.mu.Unlock()
		requestCtx, cancel := context.WithTimeout(ctx, p.timeout)
		conn, err := p.client.Request(requestCtx, request)
		cancel()
		if err != nil {
			log.FromContext(ctx).Errorf("paced refresh of %s: %v", request.GetConnection().GetId(), err)
			continue
		}
		p.mu.Lock()
		p.requests[i].Connection = conn.Clone()
		p.mu.Unlock()
	}
}
