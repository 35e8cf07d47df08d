package eagerstream_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	vxlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan/mtu"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/eagerstream"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// manyInterfaces is well past the 100 replies a govpp stream holds: what 100 tap connections
// leave in VPP for a restarted forwarder.
const manyInterfaces = 200

// TestNestedDumpOverManyInterfaces runs sdk-vpp's vxlan MTU lookup, which reads an interface dump
// while it dumps each interface's addresses, over a VPP of manyInterfaces whose tunnel interface
// is the last: it must find it. Through a plain govpp connection the lookup loses the details past
// the 100th, and the dump's end with them, and waits until its context ends.
func TestNestedDumpOverManyInterfaces(t *testing.T) {
	vpptest.Each(t, testNestedDumpOverManyInterfaces)
}

func testNestedDumpOverManyInterfaces(t *testing.T, backend vpptest.Backend) {
	vppConn := vpptest.Start(t, backend, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tunnelIP := net.ParseIP("192.0.2.1")
	last := createLoopbacks(ctx, t, vppConn)
	prefix := ip_types.NewAddressWithPrefix(net.IPNet{IP: tunnelIP, Mask: net.CIDRMask(24, 32)})
	_, err := interfaces.NewServiceClient(vppConn).SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: last, IsAdd: true, Prefix: prefix})
	require.NoError(t, err)
	const linkMTU = 1500
	_, err = interfaces.NewServiceClient(vppConn).SwInterfaceSetMtu(ctx, &interfaces.SwInterfaceSetMtu{SwIfIndex: last, Mtu: []uint32{linkMTU, linkMTU, linkMTU, linkMTU}})
	require.NoError(t, err)

	client := chain.NewNetworkServiceClient(mtu.NewClient(eagerstream.NewConnection(vppConn), tunnelIP))
	conn, err := client.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Mechanism: &networkservice.Mechanism{Cls: cls.REMOTE, Type: vxlanmech.MECHANISM, Parameters: map[string]string{}},
	}})
	require.NoError(t, err)
	got := vxlanmech.ToMechanism(conn.GetMechanism()).MTU()
	require.NotZero(t, got, "the MTU comes from the tunnel interface")
	require.Less(t, got, uint32(linkMTU), "less the vxlan overhead")
}

// createLoopbacks fills VPP with manyInterfaces loopbacks and returns the last one's index.
func createLoopbacks(ctx context.Context, t *testing.T, vppConn api.Connection) interface_types.InterfaceIndex {
	t.Helper()
	var last interface_types.InterfaceIndex
	for range manyInterfaces {
		created, err := interfaces.NewServiceClient(vppConn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
		require.NoError(t, err)
		last = created.SwIfIndex
	}
	return last
}
