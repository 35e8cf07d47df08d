package recvnetns_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// nextHop accepts a kernel mechanism in the namespace netnsURL names, as an endpoint does.
type nextHop struct {
	netnsURL string
	closes   atomic.Int32
	// closedWith is the namespace URL of the last Close.
	closedWith atomic.Value
}

func (h *nextHop) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	request.GetConnection().Mechanism = kernelMechanism(h.netnsURL)
	return next.Server(ctx).Request(ctx, request)
}

func (h *nextHop) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	h.closes.Add(1)
	h.closedWith.Store(conn.GetMechanism().GetParameters()[common.InodeURL])
	return next.Server(ctx).Close(ctx, conn)
}

// observerClient stands for the client elements that open the returned namespace.
type observerClient struct{ observer }

func (o *observerClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err == nil {
		o.see(conn.GetMechanism())
	}
	return conn, err
}

func (o *observerClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// connectToHop serves hop, passing descriptors back when sending, and returns the forwarder's
// client half toward it, ordered as in the forwarder: recvnetns behind an observer, sendfd,
// recvnetns' wire record.
func connectToHop(t *testing.T, hop *nextHop, sending bool) (networkservice.NetworkServiceClient, *observerClient) {
	t.Helper()
	elements := []networkservice.NetworkServiceServer{hop}
	if sending {
		elements = append([]networkservice.NetworkServiceServer{sendfd.NewServer()}, elements...)
	}
	u := recvnetnstest.Serve(t, func(server *grpc.Server) {
		networkservice.RegisterNetworkServiceServer(server, chain.NewNetworkServiceServer(elements...))
	})
	seen := &observerClient{}
	client := chain.NewNetworkServiceClient(seen, recvnetns.NewClient(), sendfd.NewClient(), recvnetns.NewWireClient(),
		networkservice.NewNetworkServiceClient(recvnetnstest.Dial(t, u)))
	return client, seen
}

func onwardRequest() *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection:           &networkservice.Connection{Id: "conn-1"},
		MechanismPreferences: []*networkservice.Mechanism{{Cls: cls.LOCAL, Type: kernel.MECHANISM}},
	}
}

func TestNextHopNamespacePassedAsDescriptorIsOpenedThroughIt(t *testing.T) {
	ns := vppsimtest.NewNetns(t, netnsPrefix)
	client, seen := connectToHop(t, &nextHop{netnsURL: "file://" + ns.Path()}, true)

	_, err := client.Request(timeout(t), onwardRequest())
	require.NoError(t, err)

	require.Len(t, seen.seen(), 1)
	got := seen.seen()[0]
	require.Regexp(t, fmt.Sprintf(`^file:///proc/%d/fd/\d+$`, os.Getpid()), got.url)
	dev, inode := statOf(t, ns.Path())
	require.Equal(t, [2]uint64{dev, inode}, [2]uint64{got.dev, got.inode})
}

// On a refresh the forwarder sends the next hop's namespace back with the connection, and sendfd
// turns the inode the next hop answers with into the descriptor it sent: recvfd's earlier one.
func TestRefreshWithTheSameNextHopNamespaceIsAccepted(t *testing.T) {
	ns := vppsimtest.NewNetns(t, netnsPrefix)
	client, seen := connectToHop(t, &nextHop{netnsURL: "file://" + ns.Path()}, true)
	conn, err := client.Request(timeout(t), onwardRequest())
	require.NoError(t, err)

	refresh := onwardRequest()
	refresh.Connection = conn.Clone()
	_, err = client.Request(timeout(t), refresh)
	require.NoError(t, err)

	require.Len(t, seen.seen(), 2)
	require.Equal(t, seen.seen()[0], seen.seen()[1], "the refresh opens the descriptor of the first Request")
}

// A next hop that names a namespace instead of passing it gets its connection closed, and the
// elements that would open the namespace never see it.
func TestNextHopNamespaceByPathIsRefusedAndClosed(t *testing.T) {
	for name, netnsURL := range map[string]string{
		"the node's namespace by path": "file:///proc/1/ns/net",
		"no namespace":                 "",
	} {
		t.Run(name, func(t *testing.T) {
			hop := &nextHop{netnsURL: netnsURL}
			client, seen := connectToHop(t, hop, false)

			_, err := client.Request(timeout(t), onwardRequest())
			require.ErrorContains(t, err, "the next hop's mechanism.parameters.inodeURL")
			require.Empty(t, seen.seen())
			require.Equal(t, int32(1), hop.closes.Load(), "the refused connection must be closed on the next hop")
			require.Empty(t, hop.closedWith.Load(), "the Close must not send the namespace the next hop named")
		})
	}
}
