package restore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"

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

// sdk-vpp's l2bridgedomain bridges each remote vlan connection's client interface to the VLAN
// sub-interface in one bridge domain per sub-interface, which it keeps in memory only; the
// journal records it. Two recorded connections of one VLAN share a domain: the release of the
// first leaves it (the second's interfaces are still members), the release of the second deletes
// it. A domain nobody recorded, and a recorded ID that VPP now shows with another agent's member,
// are never touched.
func TestARecordedBridgeDomainIsReleasedWithItsLastMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	uplink := v.veth(ctx, t, "uplink0", "", "uplink-tag")
	foreignEmpty := v.bridgeDomain(ctx, t)
	foreignUsed := v.bridgeDomain(ctx, t)
	v.join(ctx, t, v.tap(ctx, t, "cali1", "calico-pod-1"), foreignUsed)

	shared := v.bridgeDomain(ctx, t)
	sub := v.vlanSubif(ctx, t, uplink, 100, "next-conn-2")
	v.join(ctx, t, sub, shared)
	tap1, tap2 := v.tap(ctx, t, "nsm-conn-1", "conn-1"), v.tap(ctx, t, "nsm-conn-2", "conn-2")
	v.join(ctx, t, tap1, shared)
	v.join(ctx, t, tap2, shared)

	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	// The first connection also names foreignUsed: an ID VPP gave another agent's domain since.
	recordVlanConnection(t, j, v.client, "conn-1", tap1, sub, shared, foreignUsed)
	recordVlanConnection(t, j, v.client, "conn-2", tap2, sub, shared)

	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseOwned(ctx, "conn-1"))
	require.Equal(t, []uint32{foreignEmpty, foreignUsed, shared}, v.bridgeDomains(),
		"a bridge domain went while a recorded connection still bridges through it, or a foreign one went")
	require.Equal(t, []interface_types.InterfaceIndex{sub, tap2}, v.bridgeMembers(shared))

	require.NoError(t, leftovers.ReleaseOwned(ctx, "conn-2"))
	require.Equal(t, []uint32{foreignEmpty, foreignUsed}, v.bridgeDomains(), "the last member's release left the shared bridge domain, or took a foreign one")
	require.Len(t, v.bridgeMembers(foreignUsed), 1)
}

// recordVlanConnection writes what a run records for a remote vlan connection: a tap on the
// client's side, a VLAN sub-interface on the next hop's, and the bridge domains between them.
func recordVlanConnection(t *testing.T, j *journal.Journal, client *clientNetns, id string, clientSide, subif interface_types.InterfaceIndex, bridgeDomains ...uint32) {
	t.Helper()
	incoming := client.connection(id, "nsm-"+id, 1)
	kernel.ToMechanism(incoming.GetMechanism()).SetNetNSURL(client.fileURL)
	outgoing := incoming.Clone()
	outgoing.Id = "next-" + id
	outgoing.Mechanism = &networkservice.Mechanism{Cls: cls.REMOTE, Type: vlanmech.MECHANISM, Parameters: map[string]string{}}
	require.NoError(t, j.Begin(id, incoming))
	require.NoError(t, j.Intend(id, outgoing))
	require.NoError(t, j.Commit(id, incoming, outgoing, []journal.Interface{
		{Tag: id, SwIfIndex: uint32(clientSide)},
		{Outgoing: true, Tag: outgoing.GetId(), SwIfIndex: uint32(subif)},
	}, bridgeDomains...))
}

func (v *sharedVPP) bridgeDomain(ctx context.Context, t *testing.T) uint32 {
	t.Helper()
	reply, err := l2.NewServiceClient(v.conn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{IsAdd: true, BdID: ^uint32(0), Flood: true, Forward: true, Learn: true, UuFlood: true})
	require.NoError(t, err)
	return reply.BdID
}

func (v *sharedVPP) join(ctx context.Context, t *testing.T, member interface_types.InterfaceIndex, bridgeDomain uint32) {
	t.Helper()
	_, err := l2.NewServiceClient(v.conn).SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: member, BdID: bridgeDomain, Enable: true})
	require.NoError(t, err)
}

// bridgeDomains are the IDs of VPP's bridge domains, sorted.
func (v *sharedVPP) bridgeDomains() []uint32 {
	var ids []uint32
	for id := range v.sim.State().BridgeDomains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// bridgeMembers are the interfaces in bridgeDomain, sorted.
func (v *sharedVPP) bridgeMembers(bridgeDomain uint32) []interface_types.InterfaceIndex {
	var members []interface_types.InterfaceIndex
	for _, i := range v.sim.State().Interfaces {
		if i.Bridge != nil && i.Bridge.BdID == bridgeDomain {
			members = append(members, interface_types.InterfaceIndex(i.SwIfIndex))
		}
	}
	slices.Sort(members)
	return members
}
