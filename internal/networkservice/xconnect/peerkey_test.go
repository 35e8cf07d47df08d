package xconnect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/api/pkg/api/networkservice/payload"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	ipsecapi "github.com/networkservicemesh/govpp/binapi/ipsec"
	wireguardapi "github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// Forwarders restart one node at a time (a DaemonSet's rolling update, an OOM kill): the heal of a
// connection between two nodes then reaches, over an encrypted tunnel, one forwarder of a new run,
// whose key is new, and one that kept the connection and built its end for the old key. The end
// that stayed must be rebuilt for the new key, and nothing built for the old key may stay: for
// wireguard, each VPP holds one peer, the other end's current key; for IPsec, the end that stayed
// sets up its IKEv2 profile again for the other end's new certificate and, on the client's node,
// initiates again. A later refresh, which brings the same keys, rebuilds nothing (sdk-vpp's IPsec
// server signs a new certificate for the same key on every Request). Real VPP also carries pings
// both ways before and after. Close leaves both VPPs with their uplinks only.
func TestWireguardHealAfterOneForwarderRestarted(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		for _, restarted := range []string{"endpoint's node", "client's node"} {
			t.Run(restarted, func(t *testing.T) {
				testHealAfterOneForwarderRestarted(t, backend, wireguardmech.MECHANISM, restarted == "client's node")
			})
		}
	})
}

func TestIPsecHealAfterOneForwarderRestarted(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		for _, restarted := range []string{"endpoint's node", "client's node"} {
			t.Run(restarted, func(t *testing.T) {
				testHealAfterOneForwarderRestarted(t, backend, ipsecmech.MECHANISM, restarted == "client's node")
			})
		}
	})
}

func testHealAfterOneForwarderRestarted(t *testing.T, backend vpptest.Backend, mechanism string, restartClientNode bool) {
	nodes := startTwoNodes(t, backend)
	vppA, vppB := nodes.vppA, nodes.vppB
	var nodeA, nodeB *vppsimtest.Netns
	if nodes.kind == kernelif.Tap {
		nodeA, nodeB = vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	}
	nsc, nse := vppsimtest.NewNetns(t, netnsPrefix), vppsimtest.NewNetns(t, netnsPrefix)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	journalA, journalB := t.TempDir(), t.TempDir()
	prefer := xconnect.WithMechanismPriority([]string{mechanism})
	if backend == vpptest.Sim && mechanism == ipsecmech.MECHANISM {
		completeIKEv2(ctx, t, vppA)
	}

	nodeBEndpoint := &endpointNode{nseURL: kernelNextHop(nse.Path(), "nse-1").serve(ctx, t)}
	nodeBURL := nodeBEndpoint.serve(t)
	lifeB := startLife(t, vppB, nodes.kind, journalB, nodeB)
	nodeBEndpoint.setForwarder(lifeB.endpoint)
	lifeA := startLife(t, vppA, nodes.kind, journalA, nodeA, prefer)
	requestCtx, cancelRequest := context.WithTimeout(clienturlctx.WithClientURL(ctx, nodeBURL), 30*time.Second)
	defer cancelRequest()
	request := kernelRequest("conn-rekey", nsc.Path(), "nsc-1", payload.IP)
	conn, err := lifeA.forwarder.Request(requestCtx, request.Clone())
	require.NoError(t, err)
	switch mechanism {
	case wireguardmech.MECHANISM:
		require.Len(t, sentOfType[*wireguardapi.WireguardInterfaceCreate](vppA), 1, "no wireguard tunnel between the nodes")
	case ipsecmech.MECHANISM:
		require.Len(t, sentOfType[*ipsecapi.IpsecItfCreate](vppA), 1, "no IPsec tunnel between the nodes")
	}
	requireEncryptedTraffic(t, backend, nsc, nse)

	if restartClientNode {
		lifeA.die()
		lifeA = startLife(t, vppA, nodes.kind, journalA, nodeA, prefer)
	} else {
		lifeB.die()
		lifeB = startLife(t, vppB, nodes.kind, journalB, nodeB)
		nodeBEndpoint.setForwarder(lifeB.endpoint)
	}
	kept, keptName := vppA, "the client's node"
	if restartClientNode {
		kept, keptName = vppB, "the endpoint's node"
	}
	since := len(kept.Requests())
	request.Connection = conn.Clone()
	conn, err = lifeA.forwarder.Request(requestCtx, request.Clone())
	require.NoError(t, err, "the heal through one restarted forwarder")

	switch mechanism {
	case wireguardmech.MECHANISM:
		requirePeerIsTheOtherEnd(t, vppA, vppB)
		requirePeerIsTheOtherEnd(t, vppB, vppA)
	case ipsecmech.MECHANISM:
		deleted := profilesDeleted(kept, since)
		require.Len(t, deleted, 1, "%s kept the IKEv2 profile of the other end's previous certificate", keptName)
		require.Len(t, sentSince[*ipsecapi.IpsecItfDelete](kept, since), 1, "%s kept the IPsec interface of the other end's previous key", keptName)
		require.Len(t, sentSince[*ipsecapi.IpsecItfCreate](kept, since), 1, "%s did not build its end again", keptName)
		if !restartClientNode {
			require.Len(t, sentSince[*ikev2.Ikev2InitiateSaInit](kept, since), 1, "the client's node did not initiate again")
		}
	}
	requireEncryptedTraffic(t, backend, nsc, nse)

	// A refresh brings the same keys: nothing is rebuilt.
	sinceA, sinceB := len(vppA.Requests()), len(vppB.Requests())
	request.Connection = conn.Clone()
	conn, err = lifeA.forwarder.Request(requestCtx, request.Clone())
	require.NoError(t, err, "a refresh after the heal")
	for _, vpp := range []struct {
		name  string
		vpp   *testVPP
		since int
	}{{"the client's node", vppA, sinceA}, {"the endpoint's node", vppB, sinceB}} {
		require.Empty(t, sentSince[*wireguardapi.WireguardPeerRemove](vpp.vpp, vpp.since), "%s: a refresh removed a wireguard peer", vpp.name)
		require.Empty(t, sentSince[*wireguardapi.WireguardInterfaceCreate](vpp.vpp, vpp.since), "%s: a refresh created a wireguard interface", vpp.name)
		require.Empty(t, sentSince[*ipsecapi.IpsecItfCreate](vpp.vpp, vpp.since), "%s: a refresh rebuilt the IPsec end", vpp.name)
	}

	_, err = lifeA.forwarder.Close(requestCtx, conn)
	require.NoError(t, err)
	vppA.requireOnlyUplink(t)
	vppB.requireOnlyUplink(t)
	require.Empty(t, wireguardPeers(t, vppA), "wireguard peers left on the client's node")
	require.Empty(t, wireguardPeers(t, vppB), "wireguard peers left on the endpoint's node")
}

// requireEncryptedTraffic pings both ways across the tunnel where VPP carries it (real VPP).
func requireEncryptedTraffic(t *testing.T, backend vpptest.Backend, nsc, nse *vppsimtest.Netns) {
	t.Helper()
	if backend == vpptest.Sim {
		return
	}
	require.NoError(t, vppsimtest.Ping(nsc, nscIP, nseIP, 20*time.Second), "client to endpoint through the tunnel")
	require.NoError(t, vppsimtest.Ping(nse, nseIP, nscIP, 5*time.Second), "endpoint to client through the tunnel")
}

// requirePeerIsTheOtherEnd requires vpp to hold exactly one wireguard peer, whose key is that of
// the wireguard interface other's forwarder created last (the simulator does not derive public
// keys: the key is derived here from the private key the forwarder sent).
func requirePeerIsTheOtherEnd(t *testing.T, vpp, other *testVPP) {
	t.Helper()
	peers := wireguardPeers(t, vpp)
	require.Len(t, peers, 1, "one wireguard peer, the other end's current key")
	created := sentOfType[*wireguardapi.WireguardInterfaceCreate](other)
	require.NotEmpty(t, created, "the other node has no wireguard interface")
	private, err := wgtypes.NewKey(created[len(created)-1].Interface.PrivateKey)
	require.NoError(t, err)
	public := private.PublicKey()
	require.Equal(t, public[:], peers[0].PublicKey, "the peer is not the other end's current key")
}

func wireguardPeers(t *testing.T, vpp *testVPP) []wireguardapi.WireguardPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dump, err := wireguardapi.NewServiceClient(vpp.Conn.Connection).WireguardPeersDump(ctx, &wireguardapi.WireguardPeersDump{PeerIndex: ^uint32(0)})
	require.NoError(t, err)
	var peers []wireguardapi.WireguardPeer
	for {
		details, err := dump.Recv()
		if err != nil {
			break
		}
		peers = append(peers, details.Peer)
	}
	return peers
}

// sentSince are the requests of type T sent to vpp since the from-th.
func sentSince[T interface{ GetMessageName() string }](vpp *testVPP, from int) []T {
	var matching []T
	for _, msg := range vpp.Requests()[from:] {
		if typed, ok := msg.(T); ok {
			matching = append(matching, typed)
		}
	}
	return matching
}

// profilesDeleted names the IKEv2 profiles deleted since the from-th request.
func profilesDeleted(vpp *testVPP, from int) []string {
	var names []string
	for _, msg := range sentSince[*ikev2.Ikev2ProfileAddDel](vpp, from) {
		if !msg.IsAdd {
			names = append(names, fmt.Sprint(msg.Name))
		}
	}
	return names
}
