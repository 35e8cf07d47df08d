package restore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/tunnel_types"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// An IPsec connection's next-hop side is a route-based IPsec interface (ipsec_itf) protected by an
// IKEv2 profile that sdk-vpp names after the outgoing connection ("client-<ID>") and deletes only
// on a Close it sees. A previous run's release takes both, and leaves another agent's IPsec
// interface and profiles alone.
func TestARecordedIPsecInterfaceAndItsProfileAreReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	v.ipsecInterface(ctx, t, "strongswan-1")
	v.ikev2Profile(ctx, t, "client-other-agent")
	v.ikev2Profile(ctx, t, "server-next-conn-1")
	foreign, foreignProfiles := v.interfaces(), v.ikev2Profiles(ctx, t)

	tap := v.tap(ctx, t, "nsm-conn-1", "conn-1")
	itf := v.ipsecInterface(ctx, t, "next-conn-1")
	v.ikev2Profile(ctx, t, "client-next-conn-1")

	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	incoming := v.client.connection("conn-1", "nsm-conn-1", 1)
	kernel.ToMechanism(incoming.GetMechanism()).SetNetNSURL(v.client.fileURL)
	outgoing := incoming.Clone()
	outgoing.Id = "next-conn-1"
	outgoing.Mechanism = &networkservice.Mechanism{Cls: cls.REMOTE, Type: ipsecmech.MECHANISM, Parameters: map[string]string{}}
	require.NoError(t, j.Begin("conn-1", incoming))
	require.NoError(t, j.Intend("conn-1", outgoing))
	require.NoError(t, j.Commit("conn-1", incoming, outgoing, []journal.Interface{
		{Tag: "conn-1", SwIfIndex: uint32(tap)},
		{Outgoing: true, Tag: "next-conn-1", SwIfIndex: uint32(itf)},
	}))

	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseAll(ctx))
	require.Equal(t, foreign, v.interfaces(), "the recorded IPsec interface stayed, or another agent's went")
	require.Equal(t, foreignProfiles, v.ikev2Profiles(ctx, t),
		"the connection's IKEv2 profile stayed, or another went (server-next-conn-1 would be the endpoint side's, which this record does not have)")
}

func (v *sharedVPP) ipsecInterface(ctx context.Context, t *testing.T, tag string) interface_types.InterfaceIndex {
	t.Helper()
	reply, err := ipsec.NewServiceClient(v.conn).IpsecItfCreate(ctx, &ipsec.IpsecItfCreate{Itf: ipsec.IpsecItf{UserInstance: ^uint32(0), Mode: tunnel_types.TUNNEL_API_MODE_P2P}})
	require.NoError(t, err)
	v.tag(ctx, t, reply.SwIfIndex, tag)
	return reply.SwIfIndex
}

func (v *sharedVPP) ikev2Profile(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	_, err := ikev2.NewServiceClient(v.conn).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: name, IsAdd: true})
	require.NoError(t, err)
}

func (v *sharedVPP) ikev2Profiles(ctx context.Context, t *testing.T) []string {
	t.Helper()
	held, err := NewReleaser(v.conn, nil).ikev2Profiles(ctx)
	require.NoError(t, err)
	var names []string
	for name := range held {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
