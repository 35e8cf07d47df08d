package peerkey

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"github.com/pkg/errors"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/govpp/binapi/ikev2"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	ipsecapi "github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/wireguard/peer"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/l3xcreset"
)

// builtFor is the other end's key this end was built for.
type builtFor struct {
	mechanism string
	// key identifies the other end: wireguard's public key, the public key of IPsec's certificate.
	key string
	// wireguardKey is the key sdk-vpp's wireguard peer is stored under.
	wireguardKey string
}

type builtForKey struct{}

// otherEnd is the other end's key in conn's mechanism, as this side (client: toward the next hop)
// sees it; ok is false for other mechanisms.
func otherEnd(conn *networkservice.Connection, isClient bool) (builtFor, bool) {
	if m := wireguardmech.ToMechanism(conn.GetMechanism()); m != nil {
		key := m.SrcPublicKey()
		if isClient {
			key = m.DstPublicKey()
		}
		return builtFor{mechanism: wireguardmech.MECHANISM, key: key, wireguardKey: key}, key != ""
	}
	if m := ipsecmech.ToMechanism(conn.GetMechanism()); m != nil {
		certificate := m.SrcPublicKey()
		if isClient {
			certificate = m.DstPublicKey()
		}
		return builtFor{mechanism: ipsecmech.MECHANISM, key: certificateKey(certificate)}, certificate != ""
	}
	return builtFor{}, false
}

// certificateKey is the public key of a base64 DER certificate, as sdk-vpp's ipsec mechanism
// sends it; a certificate that does not parse stands for itself.
func certificateKey(certificate string) string {
	der, err := base64.StdEncoding.DecodeString(certificate)
	if err != nil {
		return certificate
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return certificate
	}
	return string(parsed.RawSubjectPublicKeyInfo)
}

// rebuildOnChange removes what sdk-vpp keeps for the other end's previous key when conn names
// another, and remembers the key conn names. Call it before sdk-vpp's element builds its end.
func rebuildOnChange(ctx context.Context, vppConn api.Connection, conn *networkservice.Connection, isClient bool) error {
	now, ok := otherEnd(conn, isClient)
	if !ok {
		return nil
	}
	stored, found := metadata.Map(ctx, isClient).Load(builtForKey{})
	if found {
		before := stored.(builtFor)
		if before.mechanism == now.mechanism && before.key != now.key {
			log.FromContext(ctx).Infof("peerkey: the other end of connection %s came back with another %s key: its end is rebuilt",
				conn.GetId(), now.mechanism)
			if err := forget(ctx, vppConn, conn, before, isClient); err != nil {
				return err
			}
		}
	}
	metadata.Map(ctx, isClient).Store(builtForKey{}, now)
	return nil
}

// forget removes what sdk-vpp built for the other end's previous key, and its record of it.
func forget(ctx context.Context, vppConn api.Connection, conn *networkservice.Connection, before builtFor, isClient bool) error {
	if before.mechanism == wireguardmech.MECHANISM {
		index, ok := peer.LoadAndDelete(ctx, isClient, before.wireguardKey)
		if !ok {
			return nil
		}
		_, err := wireguard.NewServiceClient(vppConn).WireguardPeerRemove(ctx, &wireguard.WireguardPeerRemove{PeerIndex: index})
		return errors.Wrapf(err, "removing the wireguard peer of the previous key of connection %s", conn.GetId())
	}
	// sdk-vpp names the profile after the side and the connection, and creates both again once
	// the interface is no longer in its metadata.
	profile := fmt.Sprintf("%s-%s", sideName(isClient), conn.GetId())
	if _, err := ikev2.NewServiceClient(vppConn).Ikev2ProfileAddDel(ctx, &ikev2.Ikev2ProfileAddDel{Name: profile, IsAdd: false}); err != nil {
		return errors.Wrapf(err, "deleting IKEv2 profile %s", profile)
	}
	swIfIndex, ok := ifindex.LoadAndDelete(ctx, isClient)
	if !ok {
		return nil
	}
	// The IP cross-connects between the two ends go too: VPP would keep the other end's on drop
	// once this interface is deleted (package l3xcreset), and sdk-vpp's l3xconnect makes both
	// afresh.
	ends := []interface_types.InterfaceIndex{swIfIndex}
	if other, ok := ifindex.Load(ctx, !isClient); ok {
		ends = append(ends, other)
	}
	if err := l3xcreset.Delete(ctx, vppConn, ends...); err != nil {
		return errors.Wrapf(err, "deleting the cross-connects of connection %s", conn.GetId())
	}
	_, err := ipsecapi.NewServiceClient(vppConn).IpsecItfDelete(ctx, &ipsecapi.IpsecItfDelete{SwIfIndex: swIfIndex})
	return errors.Wrapf(err, "deleting the IPsec interface %d of connection %s", swIfIndex, conn.GetId())
}

// sideName is sdk-vpp's ipsec prefix of a side's IKEv2 profile name.
func sideName(isClient bool) string {
	if isClient {
		return "client"
	}
	return "server"
}
