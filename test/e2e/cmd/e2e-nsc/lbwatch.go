package main

import (
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// balancing is one run of the load balancer's control plane for one vl3 address (the VIP),
// as cmd-lb-vl3-vpp's: it watches the registry for the vl3 endpoints of the service, follows
// each endpoint's connection monitor for the connections through it, keeps those the selector
// selects as the servers and has the data plane balance over them.
type balancing struct {
	service  string
	finder   registryapi.NetworkServiceEndpointRegistryClient
	dialOpts []grpc.DialOption
	servers  *serverSet
	nat      *natBalancer
	// programmed serialises the data plane's updates.
	programmed sync.Mutex
}

// retryAfter is the pause before a watch or a monitor is opened again.
const retryAfter = time.Second

// run balances until ctx ends, then removes the data plane's state.
func (b *balancing) run(ctx context.Context) {
	logger := log.FromContext(ctx).WithField("vl3lb", b.service)
	if err := b.nat.enableForwarding(); err != nil {
		logger.Errorf("IP forwarding: %v", err)
	}
	b.update(ctx)
	var monitors sync.WaitGroup
	monitored := map[string]context.CancelFunc{}
	var mu sync.Mutex
	for ctx.Err() == nil {
		stream, err := b.finder.Find(ctx, &registryapi.NetworkServiceEndpointQuery{
			NetworkServiceEndpoint: &registryapi.NetworkServiceEndpoint{NetworkServiceNames: []string{b.service}},
			Watch:                  true,
		})
		for err == nil {
			var resp *registryapi.NetworkServiceEndpointResponse
			if resp, err = stream.Recv(); err != nil {
				break
			}
			nse := resp.GetNetworkServiceEndpoint()
			mu.Lock()
			cancel, watched := monitored[nse.GetName()]
			switch {
			case resp.GetDeleted() && watched:
				// Its monitor stream ends with it; the servers go then.
				cancel()
				delete(monitored, nse.GetName())
			case !resp.GetDeleted() && !watched:
				monitorCtx, cancelMonitor := context.WithCancel(ctx)
				monitored[nse.GetName()] = cancelMonitor
				monitors.Go(func() {
					b.follow(monitorCtx, nse)
					mu.Lock()
					// A later registry event (its refresh) opens the monitor again.
					delete(monitored, nse.GetName())
					mu.Unlock()
					cancelMonitor()
				})
			}
			mu.Unlock()
		}
		if ctx.Err() == nil {
			logger.Warnf("registry watch of %s ended: %v; watching again", b.service, err)
			select {
			case <-ctx.Done():
			case <-time.After(retryAfter):
			}
		}
	}
	monitors.Wait()
	b.programmed.Lock()
	defer b.programmed.Unlock()
	// The pod is left as it was: no table.
	if err := b.nat.program(context.WithoutCancel(ctx), nil); err != nil {
		logger.Errorf("removing the balancing: %v", err)
	}
	logger.Infof("vl3 load balancer %s stopped", b.nat.vip)
}

// follow applies endpoint nse's connection events, for the connections whose path runs through
// it, until its monitor stream ends; its servers go then.
func (b *balancing) follow(ctx context.Context, nse *registryapi.NetworkServiceEndpoint) {
	logger := log.FromContext(ctx).WithField("vl3lb", b.service).WithField("nse", nse.GetName())
	defer func() {
		if b.servers.dropEndpoint(nse.GetName()) {
			b.update(ctx)
		}
	}()
	target, err := url.Parse(nse.GetUrl())
	if err != nil {
		logger.Errorf("endpoint URL %q: %v", nse.GetUrl(), err)
		return
	}
	// The monitor call waits for the endpoint to be reachable (the dial options' WaitForReady);
	// the endpoint's Deleted event from the registry ends the wait.
	// Said before the call, which waits: an unreachable URL shows here.
	logger.Infof("following the connections of %s at %s", nse.GetName(), target)
	cc, err := grpc.NewClient(grpcutils.URLToTarget(target), b.dialOpts...)
	if err != nil {
		logger.Errorf("dial %s: %v", target, err)
		return
	}
	defer func() { _ = cc.Close() }()
	stream, err := networkservice.NewMonitorConnectionClient(cc).MonitorConnections(ctx, &networkservice.MonitorScopeSelector{
		PathSegments: []*networkservice.PathSegment{{Name: nse.GetName()}},
	})
	if err != nil {
		logger.Errorf("monitor %s: %v", nse.GetName(), err)
		return
	}
	for {
		event, recvErr := stream.Recv()
		if recvErr != nil {
			logger.Infof("monitor of %s ended: %v", nse.GetName(), recvErr)
			return
		}
		if b.servers.apply(nse.GetName(), event) {
			b.update(ctx)
		}
	}
}

// update programs the data plane with the servers as they are now.
func (b *balancing) update(ctx context.Context) {
	b.programmed.Lock()
	defer b.programmed.Unlock()
	servers := b.servers.addresses()
	logger := log.FromContext(ctx).WithField("vl3lb", b.service)
	if err := b.nat.program(context.WithoutCancel(ctx), servers); err != nil {
		logger.Errorf("balancing over %v: %v", servers, err)
		return
	}
	// The harness waits for this line (domain.StartVl3LoadBalancer).
	logger.Infof("vl3 load balancer %s:%d balances over %d servers %v at port %d",
		b.nat.vip, b.nat.port, len(servers), servers, b.nat.targetPort)
}

// vip is the connection's first source address: the load balancer's vl3 address.
func vip(conn *networkservice.Connection) net.IP {
	addr, ok := sourceAddr(conn)
	if !ok {
		return nil
	}
	return net.IP(addr.AsSlice())
}
