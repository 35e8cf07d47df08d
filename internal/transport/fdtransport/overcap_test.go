package fdtransport_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// selectFirst stands for the chain behind recvnetns: it takes the first mechanism preference.
type selectFirst struct{}

func (selectFirst) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	request.GetConnection().Mechanism = request.GetMechanismPreferences()[0]
	return next.Server(ctx).Request(ctx, request)
}

func (selectFirst) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// A Request whose namespace arrives over the cap fails at once, with InvalidArgument naming the
// namespace field, instead of waiting for its deadline; the Requests within the cap are served.
func TestARequestWhoseNamespaceIsOverTheCapFailsAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	ours := fdtransport.TransportCredentials(insecure.NewCredentials(), fdtransport.WithBudget(fdtransport.NewBudget(1, 1)))
	served := recvnetnstest.ServeWith(t, ours, func(server *grpc.Server) {
		networkservice.RegisterNetworkServiceServer(server, chain.NewNetworkServiceServer(recvnetns.NewServer(), selectFirst{}))
	})
	client := recvnetnstest.SendingClient(recvnetnstest.Dial(t, served))
	requestIn := func(id string, ns *vppsimtest.Netns) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.Request(ctx, &networkservice.NetworkServiceRequest{
			Connection: &networkservice.Connection{Id: id},
			MechanismPreferences: []*networkservice.Mechanism{{Cls: cls.LOCAL, Type: kernel.MECHANISM, Parameters: map[string]string{
				kernel.NetNSURL: "file://" + ns.Path(), kernel.InterfaceNameKey: "nsm-1",
			}}},
		})
		return err
	}
	first, second := vppsimtest.NewNetns(t, "fdt"), vppsimtest.NewNetns(t, "fdt")
	require.NoError(t, requestIn("conn-1", first))
	require.NoError(t, requestIn("conn-1", first), "a refresh re-sends the namespace held: within the cap")

	start := time.Now()
	err := requestIn("conn-2", second)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "inodeURL")
	require.Less(t, time.Since(start), 2*time.Second, "the Request waited for a descriptor that was closed")
}
