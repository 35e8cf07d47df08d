package policyroute

import (
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestExhaustedCandidatesFailTheRequest(t *testing.T) {
	n := newTestNS(t)
	link := n.addLink(t, "nsm0")
	opts := []Option{WithTableRange(3000, 2)}
	for _, table := range []int{3000, 3001} {
		require.NoError(t, n.handle.RouteAdd(&netlink.Route{LinkIndex: link, Dst: mustIPNet("10.9.0.0/16"), Table: table}))
	}
	_, err := newChain(opts...).Request(quietContext(), newRequest(n, "conn-1", "nsm0", &networkservice.PolicyRoute{}))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), err)
}

func TestOptionsRejectReservedTablesAndPriorities(t *testing.T) {
	for name, opt := range map[string]Option{
		"table 0":        WithTableRange(0, 10),
		"tables 250-259": WithTableRange(250, 10),
		"empty range":    WithTableRange(1000, 0),
		"past uint32":    WithTableRange(0xfffffff0, 0x20),
		"priority 32766": WithPriorityRange(32000, 1000),
		"no probes":      WithProbeLimit(0),
	} {
		require.Panics(t, func() { NewServer(opt) }, name)
	}
	require.NotPanics(t, func() { NewServer(WithTableRange(1, 252), WithPriorityRange(1, 32765)) })
}
