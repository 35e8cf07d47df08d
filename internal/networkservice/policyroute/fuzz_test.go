package policyroute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// FuzzParsePolicies checks that any policy either is refused with InvalidArgument naming its field, or parses
// into a policy the kernel can take (masked prefixes, one family per route and its next hop, at least one
// route) that reads back the same when written out again.
func FuzzParsePolicies(f *testing.F) {
	f.Add("172.16.0.1/32", "tcp", "", "8000-8080", "10.1.0.0/16", "172.16.0.2")
	f.Add("fd00::1", "17", "53", "", "fd01::/64", "")
	f.Add("", "icmp", "", "", "", "")
	f.Fuzz(func(t *testing.T, from, proto, srcPort, dstPort, prefix, nextHop string) {
		in := &networkservice.PolicyRoute{From: from, Proto: proto, SrcPort: srcPort, DstPort: dstPort}
		if prefix != "" || nextHop != "" {
			in.Routes = []*networkservice.Route{{Prefix: prefix, NextHop: nextHop}}
		}
		parsed, err := parsePolicies([]*networkservice.PolicyRoute{in})
		if err != nil {
			require.Equal(t, codes.InvalidArgument, status.Code(err), err.Error())
			require.True(t, strings.HasPrefix(status.Convert(err).Message(), "policies[0]"), err.Error())
			return
		}
		require.Len(t, parsed, 1)
		p := parsed[0]
		require.NotEmpty(t, p.routes)
		require.NotEmpty(t, p.families)
		for _, r := range p.routes {
			require.Equal(t, r.dst, r.dst.Masked())
			require.Equal(t, r.family, routeview.FamilyOf(r.dst.Addr()))
			require.True(t, !r.gw.IsValid() || routeview.FamilyOf(r.gw) == r.family)
			if p.sel.Src.IsValid() {
				require.Equal(t, routeview.FamilyOf(p.sel.Src.Addr()), r.family)
			}
		}
		again, err := parsePolicies([]*networkservice.PolicyRoute{render(&p)})
		require.NoError(t, err)
		require.Equal(t, parsed, again)
	})
}

// render writes a parsed policy back as a PolicyRoute.
func render(p *policy) *networkservice.PolicyRoute {
	out := &networkservice.PolicyRoute{}
	if p.sel.Src.IsValid() {
		out.From = p.sel.Src.String()
	}
	if p.sel.Proto != 0 {
		out.Proto = fmt.Sprint(p.sel.Proto)
	}
	if p.sel.Sport.Start != 0 {
		out.SrcPort = fmt.Sprintf("%d-%d", p.sel.Sport.Start, p.sel.Sport.End)
	}
	if p.sel.Dport.Start != 0 {
		out.DstPort = fmt.Sprintf("%d-%d", p.sel.Dport.Start, p.sel.Dport.End)
	}
	for _, r := range p.routes {
		route := &networkservice.Route{Prefix: r.dst.String()}
		if r.gw.IsValid() {
			route.NextHop = r.gw.String()
		}
		out.Routes = append(out.Routes, route)
	}
	return out
}
