package restore

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// The forwarder died while making a connection's veth pair (vethpair): the pair's names and MACs
// were recorded before it was made, the pod's end was moved into the pod but not renamed yet, and
// sdk-vpp's af_packet on the forwarder's end exists untagged. The next run finds the forwarder's
// end by the recorded name, proves it by the recorded MAC and deletes it with the af_packet bound
// to it, which takes the pod's end too; another agent's untagged af_packet stays. Another pair
// with the recorded name but another MAC is not the recorded one and stays.
func TestAVethPairRecordedBeforeItWasMadeIsReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := newSharedVPP(t)
	peerMAC, _ := net.ParseMAC("02:00:00:27:00:01")
	podMAC, _ := net.ParseMAC("02:00:00:27:00:02")
	pair := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "icmp-resp-Ab1", HardwareAddr: podMAC}, PeerName: "icmp-resp-Cd2", PeerHardwareAddr: peerMAC}
	require.NoError(t, v.nodeLink.LinkAdd(pair))
	podEnd, err := v.nodeLink.LinkByName(pair.Name)
	require.NoError(t, err)
	require.NoError(t, v.nodeLink.LinkSetNsFd(podEnd, int(v.client.ns)))
	// sdk-vpp's af_packet on the forwarder's end, created but not yet tagged when the forwarder died.
	forwarderEnd, err := v.nodeLink.LinkByName(pair.PeerName)
	require.NoError(t, err)
	require.NoError(t, v.nodeLink.LinkSetUp(forwarderEnd))
	_, err = af_packet.NewServiceClient(v.conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: pair.PeerName, UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)
	// Another agent's untagged af_packet on a veth of its own.
	v.veth(ctx, t, "other0", "", "")
	_, err = af_packet.NewServiceClient(v.conn).AfPacketCreateV3(ctx, &af_packet.AfPacketCreateV3{
		Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "other0", UseRandomHwAddr: true, NumRxQueues: 1, NumTxQueues: 1,
	})
	require.NoError(t, err)

	conn := v.client.connection("conn-pending", "nsm-a", 1)
	j, err := journal.Open(ctx, t.TempDir())
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	require.NoError(t, j.Begin(conn.GetId(), conn))
	require.NoError(t, j.NoteCreating(conn.GetId(), journal.Interface{Tag: conn.GetId(), Peer: &journal.Link{Name: pair.PeerName, MAC: peerMAC.String()}}))

	leftovers, err := Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.Equal(t, []string{"conn-pending"}, leftovers.Owners())
	require.NoError(t, leftovers.ReleaseAll(ctx))
	require.Equal(t, []string{"host-other0 "}, afPacketNames(t, v), "the untagged af_packet on the recorded end stayed, or another agent's went")
	_, err = v.nodeLink.LinkByName(pair.PeerName)
	require.Error(t, err, "the forwarder's end of the recorded pair outlived the release")
	_, err = v.client.handle.LinkByName(pair.Name)
	require.Error(t, err, "the pod's end of the recorded pair outlived the release")

	// The same record against a look-alike: the recorded name, another MAC.
	lookAlike := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: pair.PeerName}, PeerName: "icmp-resp-Ef3"}
	require.NoError(t, v.nodeLink.LinkAdd(lookAlike))
	require.NoError(t, j.Begin(conn.GetId(), conn))
	require.NoError(t, j.NoteCreating(conn.GetId(), journal.Interface{Tag: conn.GetId(), Peer: &journal.Link{Name: pair.PeerName, MAC: peerMAC.String()}}))
	leftovers, err = Scan(ctx, NewReleaser(v.conn, nil, WithForwarderNetns(v.nodeLink)), j, false)
	require.NoError(t, err)
	require.NoError(t, leftovers.ReleaseAll(ctx))
	_, err = v.nodeLink.LinkByName(pair.PeerName)
	require.NoError(t, err, "a link that only has the recorded name was taken")
}

func afPacketNames(t *testing.T, v *sharedVPP) []string {
	t.Helper()
	var names []string
	for _, name := range v.interfaces() {
		if strings.HasPrefix(name, "host-") {
			names = append(names, name)
		}
	}
	return names
}
