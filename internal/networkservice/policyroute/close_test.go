package policyroute

import (
	"context"
	"fmt"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

func TestCloseKeepsAnotherConnectionWithTheSameSelector(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	n.addLink(t, "nsm1")
	o := newOptions(nil)
	older, newer := healPair(n, "conn-old", "conn-new")
	server := newChain()
	request(t, server, newer)
	onlyNewer := n.snapshot(t, o)
	conn := request(t, server, older)

	m := newMonitor(t, n, o)
	_, err := newChain().Close(quietContext(), conn)
	require.NoError(t, err)
	events := m.take(t)
	require.Equal(t, 2, countEvents(events, "delrule"), events)
	require.Equal(t, 2, countEvents(events, "delroute"), events)
	require.Len(t, events, 4, events)
	require.Equal(t, onlyNewer, n.snapshot(t, o))
}

func TestCloseAfterLinkVanishedRemovesRules(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	req := newRequest(n, "conn-1", "nsm0", &networkservice.PolicyRoute{From: "172.16.0.1/32"}, &networkservice.PolicyRoute{From: "fd00::1"})
	conn := request(t, newChain(), req)
	n.delLink(t, "nsm0")
	require.Len(t, n.snapshot(t, o), 2, "rules outlive the link")

	_, err := newChain().Close(quietContext(), conn)
	require.NoError(t, err)
	require.Empty(t, n.snapshot(t, o))
}

// TestForeignRulesAndRoutesAreNeverTouched fills the first candidate tables of a policy with things that are
// not provably this connection's: an unmarked rule, an unmarked route, a marked route of another link and a
// marked rule matching on more than a policy can express.
func TestForeignRulesAndRoutesAreNeverTouched(t *testing.T) {
	n := newTestNS(t)
	link := n.addLink(t, "nsm0")
	other := n.addLink(t, "nsm9")
	o := newOptions(nil)
	policy := &networkservice.PolicyRoute{From: "172.16.0.1/32", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16"}}}
	parsed, err := parsePolicies([]*networkservice.PolicyRoute{policy})
	require.NoError(t, err)
	candidates := o.candidateTables("conn-1", parsed[0].sel)

	foreignRule := netlink.NewRule()
	foreignRule.Src = mustIPNet("172.16.0.1/32")
	foreignRule.Table = int(candidates[0])
	foreignRule.Priority = 20100
	require.NoError(t, n.handle.RuleAdd(foreignRule))
	markedButForeignShape := netlink.NewRule()
	markedButForeignShape.Src = mustIPNet("172.16.0.1/32")
	markedButForeignShape.IifName = "nsm0"
	markedButForeignShape.Table = int(candidates[3])
	markedButForeignShape.Priority = 20103
	markedButForeignShape.Protocol = o.protocol
	require.NoError(t, n.handle.RuleAdd(markedButForeignShape))
	dst := mustIPNet("10.1.0.0/16")
	require.NoError(t, n.handle.RouteAdd(&netlink.Route{LinkIndex: link, Dst: dst, Table: int(candidates[1])}))
	require.NoError(t, n.handle.RouteAdd(&netlink.Route{LinkIndex: other, Dst: dst, Table: int(candidates[2]),
		Protocol: netlink.RouteProtocol(o.protocol)}))
	foreign := n.snapshot(t, o)
	require.Len(t, foreign, 4)

	conn := request(t, newChain(), newRequest(n, "conn-1", "nsm0", policy))
	routes, err := n.handle.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: int(candidates[4])}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	require.Len(t, routes, 1, "the policy lands in the first candidate that is free")
	require.Subset(t, n.snapshot(t, o), foreign)

	_, err = newChain().Close(quietContext(), conn)
	require.NoError(t, err)
	require.Equal(t, foreign, n.snapshot(t, o))
}

func TestInvalidInputIsRejectedBeforeAnyWrite(t *testing.T) {
	route := func(prefix, nextHop string) []*networkservice.Route {
		return []*networkservice.Route{{Prefix: prefix, NextHop: nextHop}}
	}
	cases := []struct {
		field    string
		policies []*networkservice.PolicyRoute
	}{
		{"policies[1].from", []*networkservice.PolicyRoute{{}, {From: "172.16.0.300/32"}}},
		{"policies[0].proto", []*networkservice.PolicyRoute{{Proto: "bogus"}}},
		{"policies[0].proto", []*networkservice.PolicyRoute{{Proto: "256"}}},
		{"policies[0].src_port", []*networkservice.PolicyRoute{{SrcPort: "0"}}},
		{"policies[0].dst_port", []*networkservice.PolicyRoute{{DstPort: "9000-8000"}}},
		{"policies[0].dst_port", []*networkservice.PolicyRoute{{DstPort: "70000"}}},
		{"policies[0].dst_port", []*networkservice.PolicyRoute{{DstPort: "80-"}}},
		{"policies[0].routes[0].prefix", []*networkservice.PolicyRoute{{Routes: route("10.0.0.0/33", "")}}},
		{"policies[0].routes[0].prefix", []*networkservice.PolicyRoute{{Routes: route("", "")}}},
		{"policies[0].routes[0].next_hop", []*networkservice.PolicyRoute{{Routes: route("10.0.0.0/8", "nowhere")}}},
		{"policies[0].routes[0].next_hop", []*networkservice.PolicyRoute{{Routes: route("10.0.0.0/8", "fd00::1")}}},
		{"policies[0].routes[0].prefix", []*networkservice.PolicyRoute{{From: "fd00::1/128", Routes: route("10.0.0.0/8", "")}}},
		{"policies[0].routes[1].prefix", []*networkservice.PolicyRoute{{Routes: append(route("10.0.0.0/8", ""), route("10.0.0.0/8", "")...)}}},
		{"policies[1]", []*networkservice.PolicyRoute{{Proto: "tcp"}, {Proto: "6"}}},
	}
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	m := newMonitor(t, n, o)
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %v", tc.field, tc.policies), func(t *testing.T) {
			after := &countingServer{}
			server := next.NewNetworkServiceServer(NewServer(), after)
			_, err := server.Request(quietContext(), newRequest(n, "conn-1", "nsm0", tc.policies...))
			require.Error(t, err)
			require.Equal(t, codes.InvalidArgument, status.Code(err), err.Error())
			require.Contains(t, err.Error(), tc.field+":")
			require.Zero(t, after.requests, "the chain must not go on with invalid input")
			require.Empty(t, m.take(t))
			require.Empty(t, n.snapshot(t, o))
		})
	}
}

// countingServer ends a test chain and counts the Requests that reached it.
type countingServer struct{ requests int }

func (c *countingServer) Request(_ context.Context, req *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	c.requests++
	return req.GetConnection(), nil
}

func (c *countingServer) Close(context.Context, *networkservice.Connection) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func TestRequestWithoutItsInterfaceFailsWithoutWrites(t *testing.T) {
	n := newTestNS(t)
	o := newOptions(nil)
	m := newMonitor(t, n, o)
	_, err := newChain().Request(quietContext(), newRequest(n, "conn-1", "nsm0", &networkservice.PolicyRoute{From: "172.16.0.1/32"}))
	require.ErrorIs(t, err, unix.ENODEV)
	require.Empty(t, m.take(t))
}

// A Close naming no interface is of a connection whose link is gone or was replaced, its name now
// another connection's: the rules its ID proves its own go (their tables emptied with the old
// link), and no route through the link of that name is touched, even in one of its tables.
func TestCloseWithoutInterfaceRemovesOnlyWhatTheIDProves(t *testing.T) {
	n := newTestNS(t)
	n.addLink(t, "nsm0")
	o := newOptions(nil)
	oldPolicy := &networkservice.PolicyRoute{From: "172.16.1.0/24", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16"}}}
	old := request(t, newChain(), newRequest(n, "conn-old", "nsm0", oldPolicy))
	n.delLink(t, "nsm0")
	n.addLink(t, "nsm0")
	successor := newRequest(n, "conn-new", "nsm0", &networkservice.PolicyRoute{From: "172.16.3.0/24", Routes: []*networkservice.Route{{Prefix: "10.3.0.0/16"}}})
	request(t, newChain(), successor)
	require.Len(t, n.snapshot(t, o), 3, "the old rule beside the successor's rule and route")
	m := newMonitor(t, n, o)

	detached := old.Clone()
	kernel.ToMechanism(detached.GetMechanism()).SetInterfaceName("")
	_, err := newChain().Close(quietContext(), detached)
	require.NoError(t, err)
	events := m.take(t)
	require.Equal(t, 1, countEvents(events, "delrule"), events)
	require.Len(t, events, 1, "only the old rule goes: %v", events)
	require.Len(t, n.snapshot(t, o), 2, "the successor's rule and route stay")
}
