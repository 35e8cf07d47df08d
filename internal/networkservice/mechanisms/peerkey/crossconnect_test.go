package peerkey

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	ipsecapi "github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
)

// Real VPP (v24.10) keeps an l3xc on drop once the interface its path leaves through is deleted,
// even after sdk-vpp's l3xconnect updates it toward the interface built again: seen as a heal
// that carries no ping, the kernel side's l3xc-input sending every packet to ip4-drop. So when an
// IPsec end is rebuilt for the other end's new key, the cross-connects of both ends of the
// connection go before its interface does, and only theirs.
func TestIPsecRebuildDeletesTheCrossConnectsOfBothEnds(t *testing.T) {
	const tunnel, kernelSide, otherConnection = 7, 3, 9
	vpp := &crossConnectedVPP{held: []l3xc.L3xc{
		{SwIfIndex: kernelSide}, {SwIfIndex: kernelSide, IsIP6: true},
		{SwIfIndex: tunnel}, {SwIfIndex: tunnel, IsIP6: true},
		{SwIfIndex: otherConnection}, {SwIfIndex: otherConnection, IsIP6: true},
	}}
	server := chain.NewNetworkServiceServer(metadata.NewServer(), &builtEnds{tunnel: tunnel, kernelSide: kernelSide}, NewServer(vpp), &onwardServer{&onwardRecorder{}})
	request := func(key string) {
		conn := &networkservice.Connection{Id: "conn-1", Mechanism: mechanismWithOtherEnd(ipsecmech.MECHANISM, key, false)}
		_, err := server.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: conn})
		require.NoError(t, err)
	}
	request(keyFor(t, ipsecmech.MECHANISM, 1))
	require.Empty(t, vpp.sent, "the first Request rebuilt something")

	request(keyFor(t, ipsecmech.MECHANISM, 2))
	require.Equal(t, []string{
		"l3xc_del 7 false", "l3xc_del 7 true", "l3xc_del 3 false", "l3xc_del 3 true", "ipsec_itf_delete 7",
	}, vpp.deletions(), "the cross-connects of both ends go before the IPsec interface, and nothing else")
	require.Equal(t, []l3xc.L3xc{{SwIfIndex: otherConnection}, {SwIfIndex: otherConnection, IsIP6: true}}, vpp.held,
		"another connection's cross-connects went too")
}

// builtEnds stands for sdk-vpp's elements before peerkey: the client's kernel side and the IPsec
// end, built once.
type builtEnds struct {
	builtServer
	tunnel, kernelSide interface_types.InterfaceIndex
}

func (b *builtEnds) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := b.builtServer.Request(ctx, request)
	if err == nil {
		ifindex.Store(ctx, false, b.tunnel)
		ifindex.Store(ctx, true, b.kernelSide)
	}
	return conn, err
}

// crossConnectedVPP holds l3xc entries and records what is deleted; it answers the deletion of
// an l3xc it does not hold as VPP does.
type crossConnectedVPP struct {
	api.Connection
	held []l3xc.L3xc
	sent []api.Message
}

func (v *crossConnectedVPP) Invoke(_ context.Context, req, _ api.Message) error {
	v.sent = append(v.sent, req)
	if del, ok := req.(*l3xc.L3xcDel); ok {
		for n, x := range v.held {
			if x.SwIfIndex == del.SwIfIndex && x.IsIP6 == del.IsIP6 {
				v.held = append(v.held[:n], v.held[n+1:]...)
				return nil
			}
		}
		return api.INVALID_VALUE
	}
	return nil
}

func (v *crossConnectedVPP) deletions() []string {
	var out []string
	for _, msg := range v.sent {
		switch m := msg.(type) {
		case *l3xc.L3xcDel:
			out = append(out, fmt.Sprintf("l3xc_del %d %t", m.SwIfIndex, m.IsIP6))
		case *ipsecapi.IpsecItfDelete:
			out = append(out, fmt.Sprintf("ipsec_itf_delete %d", m.SwIfIndex))
		}
	}
	return out
}
