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

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/replyfd"
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

func TestARequestsAnswerCarriesTheNamespace(t *testing.T) {
	nsmgr := &peerConnection{}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: nsmgr})

	_, err := chain.NewNetworkServiceServer(replyfd.NewServer()).Request(call{"/connection.NetworkService/Request"}.withIn(ctx),
		&networkservice.NetworkServiceRequest{Connection: connectionIn(t)})
	require.NoError(t, err)
	require.Equal(t, int32(1), nsmgr.queued.Load())
}

// A Close answers with nothing that could name a namespace, whether nsmgr sent it or the
// forwarder issued it itself with the Request's context: nothing is queued on nsmgr's connection,
// and the Close goes on.
func TestACloseQueuesNothing(t *testing.T) {
	nsmgr := &peerConnection{}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: nsmgr})
	for name, closeCtx := range map[string]context.Context{
		"nsmgr's Close":           call{"/connection.NetworkService/Close"}.withIn(ctx),
		"the forwarder's own one": context.WithoutCancel(call{"/connection.NetworkService/Request"}.withIn(ctx)),
	} {
		t.Run(name, func(t *testing.T) {
			counter := new(count.Server)
			_, err := chain.NewNetworkServiceServer(replyfd.NewServer(), counter).Close(closeCtx, connectionIn(t))
			require.NoError(t, err)
			require.Zero(t, nsmgr.queued.Load())
			require.Equal(t, 1, counter.Closes())
		})
	}
}
