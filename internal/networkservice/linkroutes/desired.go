package linkroutes

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// desiredRoute is a main-table route the IP context asks for, with the context field it comes from.
type desiredRoute struct {
	route routeview.Route
	field string
}

// desiredRoutes lists the routes the IP context asks for on the link, by slot. The client side of the
// forwarder's chain faces the endpoint, the server side faces the client, so each side routes toward the
// other end's addresses, as sdk-kernel's routes element does.
func desiredRoutes(ipContext *networkservice.IPContext, isClient bool, link int, mark uint8) (map[routeview.Slot]*desiredRoute, error) {
	// The context's helpers below replace a next hop they cannot parse, so check the routes as given.
	if err := validateRoutes("ip_context.src_routes", ipContext.GetSrcRoutes()); err != nil {
		return nil, err
	}
	if err := validateRoutes("ip_context.dst_routes", ipContext.GetDstRoutes()); err != nil {
		return nil, err
	}
	linkScoped, linkField := ipContext.GetDstIPRoutes(), "ip_context.dst_ip_addrs"
	viaNextHop, nextHopField := ipContext.GetSrcRoutesWithExplicitNextHop(), "ip_context.src_routes"
	if isClient {
		linkScoped, linkField = ipContext.GetSrcIPRoutes(), "ip_context.src_ip_addrs"
		viaNextHop, nextHopField = ipContext.GetDstRoutesWithExplicitNextHop(), "ip_context.dst_routes"
	}
	desired := map[routeview.Slot]*desiredRoute{}
	for _, scoped := range []struct {
		routes []*networkservice.Route
		scope  uint8
		field  string
	}{{linkScoped, unix.RT_SCOPE_LINK, linkField}, {viaNextHop, unix.RT_SCOPE_UNIVERSE, nextHopField}} {
		for _, route := range scoped.routes {
			kernelRoute, err := toKernelRoute(scoped.field, route, scoped.scope, link, mark)
			if err != nil {
				return nil, err
			}
			desired[kernelRoute.Slot()] = &desiredRoute{route: *kernelRoute, field: scoped.field}
		}
	}
	return desired, nil
}

func validateRoutes(field string, routes []*networkservice.Route) error {
	for _, route := range routes {
		if _, err := toKernelRoute(field, route, unix.RT_SCOPE_UNIVERSE, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

func toKernelRoute(field string, route *networkservice.Route, scope uint8, link int, mark uint8) (*routeview.Route, error) {
	dst, err := netip.ParsePrefix(route.GetPrefix())
	if err != nil || dst.Addr().Zone() != "" || dst.Addr().Is4In6() {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("%s: route prefix %q is not a CIDR", field, route.GetPrefix()))
	}
	dst = dst.Masked()
	kernelRoute := &routeview.Route{
		Family:   routeview.FamilyOf(dst.Addr()),
		Table:    routeview.MainTable,
		Dst:      dst,
		Oif:      link,
		Protocol: mark,
		Scope:    scope,
		Type:     unix.RTN_UNICAST,
		Plain:    true,
	}
	if route.GetNextHop() == "" {
		return kernelRoute, nil
	}
	gateway, err := netip.ParseAddr(route.GetNextHop())
	if err != nil || gateway.Zone() != "" {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("%s: route %s: next hop %q is not an IP address", field, route.GetPrefix(), route.GetNextHop()))
	}
	gateway = gateway.Unmap()
	if routeview.FamilyOf(gateway) != kernelRoute.Family {
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("%s: route %s: next hop %s is of another address family", field, route.GetPrefix(), gateway))
	}
	kernelRoute.Gw = gateway
	// The next hop is the peer's address on a point-to-point link: reachable without a connected route of
	// its own.
	kernelRoute.Onlink = scope != unix.RT_SCOPE_LINK
	return kernelRoute, nil
}
