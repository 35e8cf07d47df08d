package policyroute

import (
	"net/netip"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestBatchReportsTheFailingWrite checks that a failure in the middle of a batch is reported with the write
// that caused it, that the writes around it are applied, and that deleting something gone is no failure.
func TestBatchReportsTheFailingWrite(t *testing.T) {
	n := newTestNS(t)
	link := n.addLink(t, "nsm0")
	ns, err := openNamespace(n.url)
	require.NoError(t, err)
	defer ns.Close()

	good := func(dst string) *kernelRoute {
		return &kernelRoute{family: unix.AF_INET, table: 1000, dst: netip.MustParsePrefix(dst), oif: link, protocol: defaultProtocol, plain: true}
	}
	broken := good("10.2.0.0/16")
	broken.oif = 999999
	ops := make([]writeOp, 0, 2*batchSize)
	for i := range batchSize {
		ops = append(ops, good(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24).String()).replaceOp())
	}
	ops = append(ops, broken.replaceOp(), good("10.3.0.0/16").replaceOp(), good("10.4.0.0/16").deleteOp())

	err = ns.rtnl.write(ops)
	require.ErrorIs(t, err, unix.ENODEV)
	require.Contains(t, err.Error(), "10.2.0.0/16")
	routes, err := n.handle.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 1000}, netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	require.Len(t, routes, batchSize+1)
}

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
