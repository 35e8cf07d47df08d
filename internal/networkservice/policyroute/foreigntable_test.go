package policyroute

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Someone else's route in one of the connection's tables is never replaced or deleted: where it takes the
// slot of a policy route (here it replaced ours) the Request fails and says so; elsewhere in the table it is
// left alone, and the policy keeps its table. Close removes only what carries the mark.
func TestForeignRoutesInOurTablesAreNeverTouched(t *testing.T) {
	for _, sameSlot := range []bool{true, false} {
		t.Run(fmt.Sprintf("same slot %v", sameSlot), func(t *testing.T) {
			n := newTestNS(t)
			n.addLink(t, "nsm0")
			other := n.addLink(t, "eth0")
			o := newOptions(nil)
			policy := &networkservice.PolicyRoute{From: "172.16.0.1/32", Routes: []*networkservice.Route{{Prefix: "10.1.0.0/16", NextHop: "172.16.0.2"}}}
			server := newChain()
			request(t, server, newRequest(n, "conn-1", "nsm0", policy))
			table := o.candidateTables("conn-1", selector{Src: netip.MustParsePrefix("172.16.0.1/32")})[0]

			foreign := &netlink.Route{LinkIndex: other, Dst: mustIPNet("10.9.0.0/16"), Table: int(table), Priority: int(table)}
			if sameSlot {
				foreign.Dst = mustIPNet("10.1.0.0/16")
			}
			require.NoError(t, n.handle.RouteReplace(foreign))
			withForeign := n.snapshot(t, o)

			conn, err := server.Request(quietContext(), newRequest(n, "conn-1", "nsm0", policy))
			if sameSlot {
				require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
				require.Contains(t, err.Error(), "policies[0].routes[0]")
				require.Contains(t, err.Error(), "did not install")
				require.Equal(t, []string{fmt.Sprintf("route table %d 10.1.0.0/16 via <nil> dev eth0 metric %d proto 3", table, table)},
					n.snapshot(t, o), "the failed Request removed its own rule and left the foreign route")
				return
			}
			require.NoError(t, err)
			require.Equal(t, withForeign, n.snapshot(t, o), "the policy keeps its table, the foreign route stays")
			_, err = server.Close(quietContext(), conn)
			require.NoError(t, err)
			require.Equal(t, []string{fmt.Sprintf("route table %d 10.9.0.0/16 via <nil> dev eth0 metric %d proto 3", table, table)}, n.snapshot(t, o))
		})
	}
}
