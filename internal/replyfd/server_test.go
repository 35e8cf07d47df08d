package replyfd_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/edwarnicke/grpcfd"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/count"

	"github.com/nsmfwd/forwarder-vpp/internal/replyfd"
)

// peerConnection stands for nsmgr's connection as grpcfd presents it: it counts the descriptors
// queued on it.
type peerConnection struct {
	grpcfd.FDTransceiver
	queued atomic.Int32
}

func (p *peerConnection) SendFilename(string) <-chan error {
	p.queued.Add(1)
	done := make(chan error)
	close(done)
	return done
}

func (p *peerConnection) Network() string { return "unix" }
func (p *peerConnection) String() string  { return "nsmgr.sock" }

// call is the server transport stream of an RPC, which names its method.
type call struct{ method string }

func (c call) Method() string               { return c.method }
func (c call) SetHeader(metadata.MD) error  { return nil }
func (c call) SendHeader(metadata.MD) error { return nil }
func (c call) SetTrailer(metadata.MD) error { return nil }
func (c call) withIn(ctx context.Context) context.Context {
	return grpc.NewContextWithServerTransportStream(ctx, c)
}

func connectionIn(t *testing.T) *networkservice.Connection {
	namespaceFile := filepath.Join(t.TempDir(), "netns")
	require.NoError(t, os.WriteFile(namespaceFile, nil, 0o600))
	return &networkservice.Connection{Id: "conn-1", Mechanism: kernel.New("file://" + namespaceFile)}
}

func TestDescriptorsTravelWithAnswersToThePeersCalls(t *testing.T) {
	nsmgr := &peerConnection{}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: nsmgr})
	counter := new(count.Server)
	server := chain.NewNetworkServiceServer(replyfd.NewServer(), counter)

	_, err := server.Request(call{"/connection.NetworkService/Request"}.withIn(ctx),
		&networkservice.NetworkServiceRequest{Connection: connectionIn(t)})
	require.NoError(t, err)
	require.Equal(t, int32(1), nsmgr.queued.Load(), "the Request's answer carries the namespace")

	_, err = server.Close(call{"/connection.NetworkService/Close"}.withIn(ctx), connectionIn(t))
	require.NoError(t, err)
	require.Equal(t, int32(2), nsmgr.queued.Load(), "the Close's answer carries the namespace, as sdk's sendfd does")
	require.Equal(t, 1, counter.Closes())
}

// A Close issued by the forwarder itself has the Request's context: nothing answers it on
// nsmgr's connection, so nothing is queued there, and the Close goes on.
func TestCloseTheForwarderIssuesItselfQueuesNothing(t *testing.T) {
	nsmgr := &peerConnection{}
	requestCtx := call{"/connection.NetworkService/Request"}.withIn(peer.NewContext(context.Background(), &peer.Peer{Addr: nsmgr}))
	counter := new(count.Server)

	_, err := chain.NewNetworkServiceServer(replyfd.NewServer(), counter).Close(context.WithoutCancel(requestCtx), connectionIn(t))
	require.NoError(t, err)
	require.Zero(t, nsmgr.queued.Load())
	require.Equal(t, 1, counter.Closes())
}
