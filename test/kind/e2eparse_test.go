package kind

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The e2e test reads VPP and iproute2 output; these pin how, on output in the shape those tools print.

func TestVPPInterfaceNames(t *testing.T) {
	out := `              Name               Idx    State  MTU (L3/IP4/IP6/MPLS)     Counter          Count
host-eth0                         1      up          9000/0/0/0     rx packets                    42
                                                                    rx bytes                    4200
tap0                              2      up          1446/0/0/0
local0                            0     down          0/0/0/0
vxlan_tunnel0                     3      up          0/0/0/0        tx packets                     4`
	require.Equal(t, []string{"host-eth0", "local0", "tap0", "vxlan_tunnel0"}, vppInterfaceNames(out))
	require.Empty(t, vppInterfaceNames(""))
}

func TestRouteTableOfIPRouteGet(t *testing.T) {
	out := "172.16.30.1 from 172.16.3.201 via 172.16.3.100 dev nsm-1 table 3100423 uid 0 \n    cache "
	match := routeTable.FindStringSubmatch(out)
	require.Equal(t, "3100423", match[1])
	require.Nil(t, routeTable.FindStringSubmatch("172.16.30.1 via 10.244.0.1 dev eth0 src 10.244.0.7 uid 0"),
		"a route through the main table must not count as the policy's")
}
