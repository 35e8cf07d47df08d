package linkroutes

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// desiredRoutes lists the routes the IP context asks for on the link, keyed by destination.
// The client side of the forwarder's chain faces the endpoint, the server side faces the client,
// so each side routes toward the other end's addresses, as sdk-kernel's routes element does.
func desiredRoutes(ipContext *networkservice.IPContext, isClient bool, linkIndex int, protocol netlink.RouteProtocol) (map[string]*netlink.Route, error) {
	// The context's helpers below replace a next hop they cannot parse, so check the routes as given.
	if err := validateRoutes(append(ipContext.GetSrcRoutes(), ipContext.GetDstRoutes()...)); err != nil {
		return nil, err
	}
	linkScoped, viaNextHop := ipContext.GetDstIPRoutes(), ipContext.GetSrcRoutesWithExplicitNextHop()
	if isClient {
		linkScoped, viaNextHop = ipContext.GetSrcIPRoutes(), ipContext.GetDstRoutesWithExplicitNextHop()
	}
	desired := map[string]*netlink.Route{}
	for _, scoped := range []struct {
		routes []*networkservice.Route
		scope  netlink.Scope
	}{{linkScoped, netlink.SCOPE_LINK}, {viaNextHop, netlink.SCOPE_UNIVERSE}} {
		for _, route := range scoped.routes {
			kernelRoute, err := toKernelRoute(route, scoped.scope, linkIndex, protocol)
			if err != nil {
				return nil, err
			}
			desired[kernelRoute.Dst.String()] = kernelRoute
		}
	}
	return desired, nil
}

func validateRoutes(routes []*networkservice.Route) error {
	for _, route := range routes {
		if _, err := toKernelRoute(route, netlink.SCOPE_UNIVERSE, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

func toKernelRoute(route *networkservice.Route, scope netlink.Scope, linkIndex int, protocol netlink.RouteProtocol) (*netlink.Route, error) {
	_, dst, err := net.ParseCIDR(route.GetPrefix())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("route prefix %q is not a CIDR", route.GetPrefix()))
	}
	kernelRoute := &netlink.Route{
		LinkIndex: linkIndex,
		Dst:       dst,
		Scope:     scope,
		Table:     mainTable,
		Protocol:  protocol,
	}
	if route.GetNextHop() == "" {
		return kernelRoute, nil
	}
	gateway := net.ParseIP(route.GetNextHop())
	if gateway == nil {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("route %s: next hop %q is not an IP address", route.GetPrefix(), route.GetNextHop()))
	}
	if (gateway.To4() == nil) != (dst.IP.To4() == nil) {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("route %s: next hop %s is of another address family", route.GetPrefix(), gateway))
	}
	kernelRoute.Gw = gateway
	if scope != netlink.SCOPE_LINK {
		// The next hop is the peer's address on a point-to-point link: reachable without a
		// connected route of its own.
		kernelRoute.SetFlag(netlink.FLAG_ONLINK)
	}
	return kernelRoute, nil
}
