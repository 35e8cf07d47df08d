package peerkey

import (
	"context"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	ipsecmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/ipsec"
	wireguardmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/wireguard"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/wireguard/peer"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
)

// When VPP refuses to remove what was built for the other end's previous key, the heal fails and
// the connection onward is closed again, on both halves: what lies behind the element (the
// onward connection, its pinholes) must not stay granted for a Request that failed.
func TestFailedRemovalClosesOnward(t *testing.T) {
	for _, mechanism := range []string{wireguardmech.MECHANISM, ipsecmech.MECHANISM} {
		for _, half := range []string{"server", "client"} {
			t.Run(mechanism+"/"+half, func(t *testing.T) {
				vpp := &refusingVPP{}
				onward := &onwardRecorder{}
				server := chain.NewNetworkServiceServer(metadata.NewServer(), &builtServer{}, NewServer(vpp), &onwardServer{onward})
				client := chain.NewNetworkServiceClient(metadata.NewClient(), &builtClient{}, NewClient(vpp), &onwardClient{onward})
				request := func(key string) error {
					conn := &networkservice.Connection{Id: "conn-1", Mechanism: mechanismWithOtherEnd(mechanism, key, half == "client")}
					request := &networkservice.NetworkServiceRequest{Connection: conn}
					var err error
					if half == "server" {
						_, err = server.Request(context.Background(), request)
					} else {
						_, err = client.Request(context.Background(), request)
					}
					return err
				}
				require.NoError(t, request(keyFor(t, mechanism, 1)))
				require.Zero(t, onward.closes, "the first Request closed the connection onward")

				err := request(keyFor(t, mechanism, 2))
				require.Error(t, err, "the heal must fail when VPP refuses to remove the previous key's end")
				removal := map[string]string{wireguardmech.MECHANISM: "wireguard_peer_remove", ipsecmech.MECHANISM: "ipsec_itf_delete"}[mechanism]
				require.Contains(t, err.Error(), "refused "+removal)
				require.Equal(t, 1, onward.closes, "the failed heal left the connection onward granted")
			})
		}
	}
}

// keyFor is the other end's n-th key: a wireguard key, an IPsec certificate of its own RSA key.
func keyFor(t *testing.T, mechanism string, n int) string {
	t.Helper()
	if mechanism == ipsecmech.MECHANISM {
		return certificate(t, rsaKey(t))
	}
	return []string{"", "wireguard-key-one", "wireguard-key-two"}[n]
}

// mechanismWithOtherEnd is a mechanism naming key as the other end's: the client's (source) key
// on the server half, the next hop's (destination) key on the client half.
func mechanismWithOtherEnd(mechanism, key string, isClient bool) *networkservice.Mechanism {
	parameter := wireguardmech.SrcPublicKey
	if isClient {
		parameter = wireguardmech.DstPublicKey
	}
	return &networkservice.Mechanism{Cls: cls.REMOTE, Type: mechanism, Parameters: map[string]string{parameter: key}}
}

// builtServer and builtClient stand for sdk-vpp's wireguard and ipsec elements, which sit before
// peerkey and build their end once the answer came back through it: they record in the
// connection's metadata what they built, as sdk-vpp does.
type builtServer struct{}

func (b *builtServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err == nil {
		recordBuilt(ctx, conn, false)
	}
	return conn, err
}

func (b *builtServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

type builtClient struct{}

func (b *builtClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err == nil {
		recordBuilt(ctx, conn, true)
	}
	return conn, err
}

func (b *builtClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

func recordBuilt(ctx context.Context, conn *networkservice.Connection, isClient bool) {
	if m := wireguardmech.ToMechanism(conn.GetMechanism()); m != nil {
		key := m.SrcPublicKey()
		if isClient {
			key = m.DstPublicKey()
		}
		peer.Store(ctx, isClient, key, 7)
		return
	}
	ifindex.Store(ctx, isClient, interface_types.InterfaceIndex(7))
}

// onwardRecorder counts the Closes of what lies behind peerkey, which grants every Request.
type onwardRecorder struct{ closes int }

type onwardServer struct{ *onwardRecorder }

func (o *onwardServer) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return request.GetConnection(), nil
}

func (o *onwardServer) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	o.closes++
	return &empty.Empty{}, nil
}

type onwardClient struct{ *onwardRecorder }

func (o *onwardClient) Request(_ context.Context, request *networkservice.NetworkServiceRequest, _ ...grpc.CallOption) (*networkservice.Connection, error) {
	return request.GetConnection(), nil
}

func (o *onwardClient) Close(context.Context, *networkservice.Connection, ...grpc.CallOption) (*empty.Empty, error) {
	o.closes++
	return &empty.Empty{}, nil
}

// refusingVPP refuses to remove a wireguard peer or an IPsec interface, as VPP answers when the
// removal fails, and accepts everything else.
type refusingVPP struct{ api.Connection }

func (v *refusingVPP) Invoke(_ context.Context, req, _ api.Message) error {
	switch req.GetMessageName() {
	case "wireguard_peer_remove", "ipsec_itf_delete":
		return errors.Errorf("VPP refused %s", req.GetMessageName())
	case "l3xc_del":
		return api.INVALID_VALUE // it holds none
	}
	return nil
}
