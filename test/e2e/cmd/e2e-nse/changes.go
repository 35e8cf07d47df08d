package main

import (
	"context"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// contextChanges lets a scenario change what the endpoint hands its clients
// without a restart; each connection takes a change on its next Request (a
// refresh). It runs before the IPAM.
//
//   - SIGUSR2 reroutes: the routes the endpoint has through each client
//     (IPContext.DstRoutes, next hop the client's address) go from
//     NSM_DST_ROUTES to NSM_REROUTE_DST_ROUTES, addresses unchanged.
//   - SIGHUP re-addresses: the IPAM holds NSM_CIDR_PREFIX and
//     NSM_READDRESS_CIDR_PREFIX, and every Request now excludes the first, so
//     sdk's point2pointipam drops a connection's old addresses and their
//     routes from the IP context and gives it new ones from the second. The
//     exclusion is not handed back to the client.
type contextChanges struct {
	oldPrefixes               []string
	routesBefore, routesAfter []string
	readdressed, rerouted     atomic.Bool
}

func (c *contextChanges) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn := request.GetConnection()
	if conn.GetContext() == nil {
		conn.Context = &networkservice.ConnectionContext{}
	}
	if conn.GetContext().GetIpContext() == nil {
		conn.GetContext().IpContext = &networkservice.IPContext{}
	}
	ipContext := conn.GetContext().GetIpContext()
	c.routeThroughClient(ipContext)
	if !c.readdressed.Load() {
		return next.Server(ctx).Request(ctx, request)
	}
	var added []string
	for _, prefix := range c.oldPrefixes {
		if !slices.Contains(ipContext.GetExcludedPrefixes(), prefix) {
			added = append(added, prefix)
		}
	}
	ipContext.ExcludedPrefixes = append(ipContext.ExcludedPrefixes, added...)
	granted, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if grantedIPContext := granted.GetContext().GetIpContext(); grantedIPContext != nil {
		grantedIPContext.ExcludedPrefixes = slices.DeleteFunc(grantedIPContext.ExcludedPrefixes, func(p string) bool {
			return slices.Contains(added, p)
		})
	}
	return granted, nil
}

func (c *contextChanges) Close(ctx context.Context, conn *networkservice.Connection) (*emptypb.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// routeThroughClient makes the context's routes through the client the
// current set, the other set removed.
func (c *contextChanges) routeThroughClient(ipContext *networkservice.IPContext) {
	current, previous := c.routesBefore, c.routesAfter
	if c.rerouted.Load() {
		current, previous = c.routesAfter, c.routesBefore
	}
	ipContext.DstRoutes = slices.DeleteFunc(ipContext.DstRoutes, func(route *networkservice.Route) bool {
		return slices.Contains(previous, route.GetPrefix())
	})
	for _, prefix := range current {
		if !slices.ContainsFunc(ipContext.DstRoutes, func(route *networkservice.Route) bool { return route.GetPrefix() == prefix }) {
			ipContext.DstRoutes = append(ipContext.DstRoutes, &networkservice.Route{Prefix: prefix})
		}
	}
}

// watch applies SIGHUP and SIGUSR2 until ctx ends.
func (c *contextChanges) watch(ctx context.Context, readdressPrefixes []*net.IPNet) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGUSR2)
	defer signal.Stop(signals)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-signals:
			switch sig {
			case syscall.SIGHUP:
				c.readdressed.Store(true)
				log.FromContext(ctx).Infof("SIGHUP: the endpoint hands out addresses from %v from now on", readdressPrefixes)
			case syscall.SIGUSR2:
				c.rerouted.Store(true)
				log.FromContext(ctx).Infof("SIGUSR2: the endpoint reaches %v through each client from now on", c.routesAfter)
			}
		}
	}
}
