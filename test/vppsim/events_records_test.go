package vppsim_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/ikev2"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
)

func TestInterfaceEvents(t *testing.T) {
	sim := startSim(t, "")
	watcherConn, otherConn := connect(t, sim), connect(t, sim)
	ctx := ctxFor(t)
	ifc := interfaces.NewServiceClient(watcherConn)

	_, err := ifc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 4242})
	require.NoError(t, err)
	_, err = ifc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 4242})
	requireAPIError(t, err, api.INVALID_REGISTRATION)

	watcher, err := watcherConn.WatchEvent(ctx, &interfaces.SwInterfaceEvent{})
	require.NoError(t, err)
	defer watcher.Close()

	// Changes made by another client are announced to the subscriber.
	loop, err := interfaces.NewServiceClient(otherConn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
	require.NoError(t, err)
	setUp(ctx, t, otherConn, loop.SwIfIndex)
	ev := nextEvent(t, watcher)
	require.Equal(t, loop.SwIfIndex, ev.SwIfIndex)
	require.Equal(t, uint32(4242), ev.PID)
	require.Equal(t, interface_types.IF_STATUS_API_FLAG_ADMIN_UP|interface_types.IF_STATUS_API_FLAG_LINK_UP, ev.Flags)

	_, err = interfaces.NewServiceClient(otherConn).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop.SwIfIndex})
	require.NoError(t, err)
	ev = nextEvent(t, watcher)
	require.True(t, ev.Deleted)
}

func nextEvent(t *testing.T, w api.Watcher) *interfaces.SwInterfaceEvent {
	t.Helper()
	select {
	case msg := <-w.Events():
		ev, ok := msg.(*interfaces.SwInterfaceEvent)
		require.True(t, ok, "unexpected event %T", msg)
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no sw_interface_event")
		return nil
	}
}

// TestRecordedObjects covers what the simulator records and dumps without a data path.
func TestRecordedObjects(t *testing.T) {
	sim := startSim(t, "")
	conn := connect(t, sim)
	ctx := ctxFor(t)

	sock, err := memif.NewServiceClient(conn).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: "/tmp/x.sock"})
	require.NoError(t, err)
	m, err := memif.NewServiceClient(conn).MemifCreate(ctx, &memif.MemifCreate{SocketID: sock.SocketID, ID: 3, Role: memif.MEMIF_ROLE_API_MASTER})
	require.NoError(t, err)
	memifs := recvAll(t, must(memif.NewServiceClient(conn).MemifDump(ctx, &memif.MemifDump{})).Recv)
	require.Len(t, memifs, 1)
	require.Equal(t, m.SwIfIndex, memifs[0].SwIfIndex)

	wg, err := wireguard.NewServiceClient(conn).WireguardInterfaceCreate(ctx, &wireguard.WireguardInterfaceCreate{Interface: wireguard.WireguardInterface{
		UserInstance: ^uint32(0), PrivateKey: make([]byte, 32), PublicKey: make([]byte, 32), Port: 51820, SrcIP: mustAddress(t, "10.1.0.1"),
	}})
	require.NoError(t, err)
	peer, err := wireguard.NewServiceClient(conn).WireguardPeerAdd(ctx, &wireguard.WireguardPeerAdd{Peer: wireguard.WireguardPeer{
		SwIfIndex: wg.SwIfIndex, PublicKey: make([]byte, 32), Endpoint: mustAddress(t, "10.1.0.2"), Port: 51820,
		AllowedIps: []ip_types.Prefix{mustIPPrefix(t, "172.16.0.0/16")},
	}})
	require.NoError(t, err)
	peers := recvAll(t, must(wireguard.NewServiceClient(conn).WireguardPeersDump(ctx, &wireguard.WireguardPeersDump{PeerIndex: ^uint32(0)})).Recv)
	require.Len(t, peers, 1)
	require.Equal(t, peer.PeerIndex, peers[0].Peer.PeerIndex)
	require.Equal(t, "172.16.0.0/16", peers[0].Peer.AllowedIps[0].String())
	require.Equal(t, wireguard.WIREGUARD_PEER_ESTABLISHED, peers[0].Peer.Flags, "peers count as established at once")
	_, err = wireguard.NewServiceClient(conn).WireguardPeerRemove(ctx, &wireguard.WireguardPeerRemove{PeerIndex: 9})
	requireAPIError(t, err, api.NO_SUCH_ENTRY)

	itf, err := ipsec.NewServiceClient(conn).IpsecItfCreate(ctx, &ipsec.IpsecItfCreate{Itf: ipsec.IpsecItf{UserInstance: ^uint32(0)}})
	require.NoError(t, err)
	require.Equal(t, "ipsec0", sim.State().Interfaces[uint32(itf.SwIfIndex)].Name)

	sub, err := interfaces.NewServiceClient(conn).CreateVlanSubif(ctx, &interfaces.CreateVlanSubif{SwIfIndex: itf.SwIfIndex, VlanID: 100})
	require.NoError(t, err)
	subs := recvAll(t, must(interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: sub.SwIfIndex})).Recv)
	require.Equal(t, interface_types.IF_API_TYPE_SUB, subs[0].Type)
	require.Equal(t, uint16(100), subs[0].SubOuterVlanID)

	ike := ikev2.NewServiceClient(conn)
	_, err = ike.Ikev2ProfileSetUDPEncap(ctx, &ikev2.Ikev2ProfileSetUDPEncap{Name: "p1"})
	requireAPIError(t, err, api.UNSPECIFIED)
	_, err = ike.Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: "p1", IsAdd: true})
	require.NoError(t, err)
	_, err = ike.Ikev2ProfileSetUDPEncap(ctx, &ikev2.Ikev2ProfileSetUDPEncap{Name: "p1"})
	require.NoError(t, err)
	require.Contains(t, string(sim.State().Records["ikev2_profile"]["p1"]), "ikev2_profile_set_udp_encap")
}

// TestStaleSocketAndStateSocket: a socket file left by a killed simulator is replaced,
// and the state socket serves the whole state.
func TestStaleSocketAndStateSocket(t *testing.T) {
	dir := t.TempDir()
	apiSocket := filepath.Join(dir, "api.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: apiSocket, Net: "unix"})
	require.NoError(t, err)
	stale.SetUnlinkOnClose(false)
	require.NoError(t, stale.Close())
	_, err = os.Stat(apiSocket)
	require.NoError(t, err, "the stale socket file must still be there")

	stateSocket := filepath.Join(dir, "state.sock")
	sim, err := vppsim.Start(ctxFor(t), vppsim.Config{APISocket: apiSocket, StateSocket: stateSocket})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	conn := connect(t, sim)
	_, err = interfaces.NewServiceClient(conn).CreateLoopback(ctxFor(t), &interfaces.CreateLoopback{})
	require.NoError(t, err)

	snap, err := vppsim.ReadState(stateSocket)
	require.NoError(t, err)
	require.Len(t, snap.Clients, 1)
	names := []string{}
	for _, i := range snap.State.SortedInterfaces() {
		names = append(names, i.Name)
	}
	require.Equal(t, []string{"local0", "loop0"}, names)
}
