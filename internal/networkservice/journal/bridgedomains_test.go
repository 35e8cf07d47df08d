package journal_test

import (
	"context"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// bridgesToVlan stands for sdk-vpp's vlan client and l2bridgedomain: the next hop's side is a VLAN
// sub-interface, bridged in a domain that it makes the first time and then keeps in memory.
type bridgesToVlan struct {
	t       *testing.T
	vppConn api.Connection
	subif   interface_types.InterfaceIndex
	// bridgeDomain is the domain in memory; 0 before the first Request, and after a restart.
	bridgeDomain uint32
}

func (b *bridgesToVlan) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	vlan.Store(ctx, true, 100)
	ifindex.Store(ctx, true, b.subif)
	if b.bridgeDomain == 0 {
		reply, err := l2.NewServiceClient(b.vppConn).BridgeDomainAddDelV2(ctx, &l2.BridgeDomainAddDelV2{IsAdd: true, BdID: ^uint32(0), Flood: true, Forward: true, Learn: true, UuFlood: true})
		require.NoError(b.t, err)
		b.bridgeDomain = reply.BdID
		_, err = l2.NewServiceClient(b.vppConn).SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: b.subif, BdID: b.bridgeDomain, Enable: true})
		require.NoError(b.t, err)
	}
	return request.GetConnection(), nil
}

func (b *bridgesToVlan) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return &empty.Empty{}, nil
}

// readsIntent keeps what the journal's files said of the connection right after the chain below
// it programmed, before the Request's commit.
type readsIntent struct {
	dir    string
	intent *journal.State
}

func (r *readsIntent) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	records, readErr := journal.Read(r.dir)
	if readErr == nil && len(records) == 1 {
		r.intent = records[0].Intent
	}
	return conn, err
}

func (r *readsIntent) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// A remote vlan connection's bridge domain, which sdk-vpp keeps in memory only, is on disk in the
// intent as soon as the chain below made it, and in the committed state after. A refresh that
// finds it again writes nothing new. After a restart, the chain's memory is empty and it bridges
// the connection in a new domain: the commit names that one, and the old one is handed to the
// release as superseded, so that it does not outlive the run that made it.
func TestAVlanConnectionsBridgeDomainIsRecordedAndSuperseded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vppConn := vppsimtest.Dial(t, vppsimtest.StartSim(t, ""))
	uplink, err := interfaces.NewServiceClient(vppConn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
	require.NoError(t, err)
	subif, err := interfaces.NewServiceClient(vppConn).CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: uplink.SwIfIndex, VlanID: 100})
	require.NoError(t, err)

	dir := t.TempDir()
	cleanup := &recordingCleanup{}
	run := func(j *journal.Journal) (*readsIntent, *bridgesToVlan, networkservice.NetworkServiceServer) {
		intent, bridges := &readsIntent{dir: dir}, &bridgesToVlan{t: t, vppConn: vppConn, subif: subif.SwIfIndex}
		return intent, bridges, next.NewNetworkServiceServer(metadata.NewServer(), journal.NewServer(ctx, j, cleanup.cleanup), intent,
			journal.NewBridgeDomainServer(j, vppConn), bridges)
	}
	committed := func() *journal.State {
		records, err := journal.Read(dir)
		require.NoError(t, err)
		require.Len(t, records, 1)
		require.Nil(t, records[0].Intent)
		return records[0].Committed
	}
	request := &networkservice.NetworkServiceRequest{Connection: kernelConnection("conn-1", "", "inode://4/4026532000")}

	j := open(t, dir)
	intent, bridges, server := run(j)
	_, err = server.Request(ctx, request.Clone())
	require.NoError(t, err)
	first := bridges.bridgeDomain
	require.NotNil(t, intent.intent, "nothing was on disk before the commit")
	require.Equal(t, []uint32{first}, intent.intent.BridgeDomains, "the bridge domain was not in the intent before the commit")
	require.Equal(t, []uint32{first}, committed().BridgeDomains)

	intent.intent = nil
	_, err = server.Request(ctx, request.Clone())
	require.NoError(t, err)
	require.Nil(t, intent.intent, "a refresh that found the same bridge domain wrote an intent")
	require.Equal(t, []uint32{first}, committed().BridgeDomains)
	require.Empty(t, cleanup.records)
	require.NoError(t, j.Close())

	_, bridges, server = run(open(t, dir))
	_, err = server.Request(ctx, request.Clone())
	require.NoError(t, err)
	require.NotEqual(t, first, bridges.bridgeDomain)
	require.Equal(t, []uint32{bridges.bridgeDomain}, committed().BridgeDomains)
	require.Len(t, cleanup.records, 1, "the previous run's bridge domain was not handed to the release")
	released := cleanup.records[0]
	require.Nil(t, released.Committed, "the release was handed the live state")
	require.Equal(t, []uint32{first}, released.BridgeDomains())
}
