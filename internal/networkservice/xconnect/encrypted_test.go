package xconnect_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	wireguardapi "github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// encryptedTunnel is the client node's forwarder reaching a remote next hop over wireguard or
// ipsec. The simulator negotiates nothing and carries no encrypted traffic: there the next hop is
// a stub that completes the mechanism with a made-up remote end. On real VPP it is a second node,
// whose VPP and forwarder answer the handshake, and pings cross the tunnel.
type encryptedTunnel struct {
	// harness is the client node's forwarder and VPP.
	*harness
	// peer is the endpoint node's VPP (real VPP only).
	peer     *testVPP
	nsc, nse *vppsimtest.Netns
	// stubKey is the stub's wireguard key (simulator only).
	stubKey wgtypes.Key
}

func startEncryptedTunnel(t *testing.T, backend vpptest.Backend, mechanism string) *encryptedTunnel {
	t.Helper()
	e := &encryptedTunnel{nsc: vppsimtest.NewNetns(t, netnsPrefix), nse: vppsimtest.NewNetns(t, netnsPrefix)}
	if backend == vpptest.Sim {
		e.harness = newHarness(t, backend, kernelif.Tap, e.stubHop(t, mechanism))
		if mechanism == ipsecmech.MECHANISM {
			completeIKEv2(e.ctx, t, e.vpp)
		}
		return e
	}
	nodes := startTwoNodes(t, backend)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.peer = nodes.vppB
	forwarder := newForwarder(ctx, t, nodes.vppA, nodes.vppA, nodes.kind, xconnect.WithMechanismPriority([]string{mechanism}))
	e.harness = &harness{
		ctx:       clienturlctx.WithClientURL(ctx, nodes.serveEndpointNode(ctx, t, e.nse)),
		vpp:       nodes.vppA,
		forwarder: forwarder,
		nsmgr:     serveForwarder(t, forwarder),
	}
	return e
}

// stubHop is a remote next hop that accepts mechanism with a remote end of its own making.
func (e *encryptedTunnel) stubHop(t *testing.T, mechanism string) *nextHop {
	t.Helper()
	if mechanism == wireguardmech.MECHANISM {
		var err error
		e.stubKey, err = wgtypes.GeneratePrivateKey()
		require.NoError(t, err)
		return &nextHop{mechanismType: mechanism, remote: true, configure: func(m *networkservice.Mechanism) {
			wireguardmech.ToMechanism(m).SetDstIP(remoteIP).SetDstPublicKey(e.stubKey.PublicKey().String()).SetDstPort(51820)
		}}
	}
	// The forwarder hands the remote's certificate to VPP as a file; the simulator never reads it.
	certificate := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("remote certificate "), 8))
	return &nextHop{mechanismType: mechanism, remote: true, configure: func(m *networkservice.Mechanism) {
		ipsecmech.ToMechanism(m).SetDstIP(remoteIP).SetDstPublicKey(certificate)
	}}
}

// remoteWireguardKey is the public key of the next hop's wireguard end.
func (e *encryptedTunnel) remoteWireguardKey(t *testing.T) []byte {
	t.Helper()
	if e.peer == nil {
		key := e.stubKey.PublicKey()
		return key[:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dump, err := wireguardapi.NewServiceClient(e.peer.Conn.Connection).WireguardInterfaceDump(ctx, &wireguardapi.WireguardInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	details, err := dump.Recv()
	require.NoError(t, err, "the endpoint node's VPP has no wireguard interface")
	_, err = dump.Recv()
	require.ErrorIs(t, err, io.EOF, "the endpoint node's VPP has more than one wireguard interface")
	return details.Interface.PublicKey
}

// requireTraffic pings across the tunnel both ways, where VPP carries it (real VPP only).
func (e *encryptedTunnel) requireTraffic(t *testing.T) {
	t.Helper()
	if e.peer == nil {
		return
	}
	require.NoError(t, vppsimtest.Ping(e.nsc, nscIP, nseIP, 10*time.Second), "client to endpoint through the tunnel")
	require.NoError(t, vppsimtest.Ping(e.nse, nseIP, nscIP, 5*time.Second), "endpoint to client through the tunnel")
}

// requireOnlyUplinks requires every VPP of the tunnel to be back to its uplink.
func (e *encryptedTunnel) requireOnlyUplinks(t *testing.T) {
	t.Helper()
	e.vpp.requireOnlyUplink(t)
	if e.peer != nil {
		e.peer.requireOnlyUplink(t)
		require.Equal(t, []string{"lo"}, linkNamesIn(t, e.nse.Path()), "links left in the endpoint namespace")
	}
}
