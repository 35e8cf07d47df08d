package main

import (
	"context"
	"net/netip"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// policyRoutes gives each connection one policy route per client address:
// traffic from that address to any of prefixes goes to the endpoint's own
// address of the same family. It runs after the IPAM, whose addresses it
// reads; a re-Request gets the policies recomputed from the current ones.
type policyRoutes struct {
	prefixes []netip.Prefix
}

func (p *policyRoutes) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	ipContext := request.GetConnection().GetContext().GetIpContext()
	if ipContext != nil {
		ipContext.Policies = p.policiesFor(ipContext)
	}
	return next.Server(ctx).Request(ctx, request)
}

func (p *policyRoutes) Close(ctx context.Context, conn *networkservice.Connection) (*emptypb.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

func (p *policyRoutes) policiesFor(ipContext *networkservice.IPContext) []*networkservice.PolicyRoute {
	var policies []*networkservice.PolicyRoute
	for _, src := range ipContext.GetSrcIpAddrs() {
		from, err := netip.ParsePrefix(src)
		if err != nil {
			continue
		}
		nextHop, ok := sameFamilyAddr(ipContext.GetDstIpAddrs(), from.Addr().Is4())
		if !ok {
			continue
		}
		policy := &networkservice.PolicyRoute{From: netip.PrefixFrom(from.Addr(), from.Addr().BitLen()).String()}
		for _, prefix := range p.prefixes {
			if prefix.Addr().Is4() == from.Addr().Is4() {
				policy.Routes = append(policy.Routes, &networkservice.Route{Prefix: prefix.String(), NextHop: nextHop.String()})
			}
		}
		if len(policy.Routes) > 0 {
			policies = append(policies, policy)
		}
	}
	return policies
}

func sameFamilyAddr(cidrs []string, ipv4 bool) (netip.Addr, bool) {
	for _, cidr := range cidrs {
		prefix, err := netip.ParsePrefix(cidr)
		if err == nil && prefix.Addr().Is4() == ipv4 {
			return prefix.Addr(), true
		}
	}
	return netip.Addr{}, false
}
