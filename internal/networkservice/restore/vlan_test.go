package restore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// A remote vlan connection's next-hop side is a VPP sub-interface of the uplink (sdk-vpp's vlan
// client), tagged with the outgoing connection's ID. The journal records it by index and tag: its
// release takes that sub-interface, and leaves the uplink and another agent's sub-interface alone.
func TestARecordedVlanSubinterfaceIsReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	uplink := v.veth(ctx, t, "uplink0", "", "uplink-tag")
	foreignSub := v.vlanSubif(ctx, t, uplink, 200, "calico-vlan-200")
	foreign := v.interfaces()
	ours := v.vlanSubif(ctx, t, uplink, 100, "hop1-out")

	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	incoming := chainHop(v.client, 1, "forwarder")
	outgoing := &networkservice.Connection{
		Id:             "hop1-out",
		Mechanism:      &networkservice.Mechanism{Cls: cls.REMOTE, Type: vlanmech.MECHANISM, Parameters: map[string]string{}},
		Path:           incoming.GetPath(),
		NetworkService: incoming.GetNetworkService(),
	}
	require.NoError(t, j.Begin(incoming.GetId(), incoming))
	require.NoError(t, j.Commit(incoming.GetId(), incoming, outgoing, []journal.Interface{{Outgoing: true, Tag: "hop1-out", SwIfIndex: uint32(ours)}}))

	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseAll(ctx))
	require.Equal(t, foreign, v.interfaces(), "the recorded vlan sub-interface stayed, or another was taken with it")
	require.NotZero(t, foreignSub)
}

func (v *sharedVPP) vlanSubif(ctx context.Context, t *testing.T, parent interface_types.InterfaceIndex, vlan uint32, tag string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := interfaces.NewServiceClient(v.conn).CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: parent, VlanID: vlan})
	require.NoError(t, err)
	v.tag(ctx, t, reply.SwIfIndex, tag)
	return reply.SwIfIndex
}
