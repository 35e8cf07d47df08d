package main

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// policyRoutes gives each connection, per client address, one policy route
// per selector: traffic from that address (and, for a selector, of that IP
// protocol to that destination port) to the selector's prefixes goes to the
// endpoint's own address of the same family. It runs after the IPAM, whose
// addresses it reads; a re-Request gets the policies recomputed from the
// current ones.
type policyRoutes struct {
	entries []policyEntry
}

// policyEntry is one NSM_POLICY_ROUTES entry: PREFIX, or PREFIX@PROTO:PORT
// (an IP protocol number and a destination port or range, as
// networkservice.PolicyRoute holds them), e.g. 192.0.2.0/24@6:5201.
type policyEntry struct {
	prefix       netip.Prefix
	proto, dport string
}

func parsePolicyEntry(entry string) (policyEntry, error) {
	prefixText, selector, hasSelector := strings.Cut(entry, "@")
	prefix, err := netip.ParsePrefix(prefixText)
	if err != nil {
		return policyEntry{}, fmt.Errorf("NSM_POLICY_ROUTES entry %q: %w", entry, err)
	}
	e := policyEntry{prefix: prefix.Masked()}
	if !hasSelector {
		return e, nil
	}
	var ok bool
	if e.proto, e.dport, ok = strings.Cut(selector, ":"); !ok {
		return policyEntry{}, fmt.Errorf("NSM_POLICY_ROUTES entry %q: the selector is PROTO:PORT", entry)
	}
	if _, err = strconv.ParseUint(e.proto, 10, 8); err != nil {
		return policyEntry{}, fmt.Errorf("NSM_POLICY_ROUTES entry %q: IP protocol number: %w", entry, err)
	}
	if _, err = networkservice.ParsePortRange(e.dport); err != nil {
		return policyEntry{}, fmt.Errorf("NSM_POLICY_ROUTES entry %q: destination port: %w", entry, err)
	}
	return e, nil
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
		bySelector := map[[2]string]*networkservice.PolicyRoute{}
		for _, e := range p.entries {
			if e.prefix.Addr().Is4() != from.Addr().Is4() {
				continue
			}
			policy := bySelector[[2]string{e.proto, e.dport}]
			if policy == nil {
				policy = &networkservice.PolicyRoute{From: netip.PrefixFrom(from.Addr(), from.Addr().BitLen()).String(), Proto: e.proto, DstPort: e.dport}
				bySelector[[2]string{e.proto, e.dport}] = policy
				policies = append(policies, policy)
			}
			policy.Routes = append(policy.Routes, &networkservice.Route{Prefix: e.prefix.String(), NextHop: nextHop.String()})
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
