package findretry_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/chain"
	"github.com/networkservicemesh/sdk/pkg/registry/core/streamchannel"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nsmfwd/forwarder-vpp/internal/registry/findretry"
)

// grpcfdFault is how a client sees the nsmgr's sendfd failing an answer: the handler's error, with
// no code of its own.
var grpcfdFault = status.Error(codes.Unknown, "failed to send a file /tmp/nse.sock, the file probably doesn't exist: close /tmp/nse.sock: file already closed")

// attempt is what the registry does with one Find: the answers it sends, then how the stream ends
// (nil for its end), or an error from the call itself.
type attempt struct {
	answers   []string
	streamErr error
	callErr   error
}

type scriptedRegistry struct {
	registry.NetworkServiceEndpointRegistryClient
	script []attempt
	finds  int
}

func (r *scriptedRegistry) Find(ctx context.Context, _ *registry.NetworkServiceEndpointQuery, _ ...grpc.CallOption) (registry.NetworkServiceEndpointRegistry_FindClient, error) {
	a := r.script[min(r.finds, len(r.script)-1)]
	r.finds++
	if a.callErr != nil {
		return nil, a.callErr
	}
	return &scriptedStream{ctx: ctx, answers: a.answers, end: a.streamErr}, nil
}

type scriptedStream struct {
	grpc.ClientStream
	ctx     context.Context
	answers []string
	end     error
}

func (s *scriptedStream) Recv() (*registry.NetworkServiceEndpointResponse, error) {
	if len(s.answers) == 0 {
		if s.end != nil {
			return nil, s.end
		}
		return nil, io.EOF
	}
	name := s.answers[0]
	s.answers = s.answers[1:]
	return &registry.NetworkServiceEndpointResponse{NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: name}}, nil
}

func (s *scriptedStream) Context() context.Context { return s.ctx }

func clientOver(r *scriptedRegistry) registry.NetworkServiceEndpointRegistryClient {
	return chain.NewNetworkServiceEndpointRegistryClient(findretry.NewNetworkServiceEndpointRegistryClient(), r)
}

func readNames(t *testing.T, stream registry.NetworkServiceEndpointRegistry_FindClient) []string {
	t.Helper()
	var names []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return names
		}
		require.NoError(t, err)
		names = append(names, resp.GetNetworkServiceEndpoint().GetName())
	}
}

var oneShot = &registry.NetworkServiceEndpointQuery{NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: "nse-1"}}

func TestFindFailedWithoutCodeIsAskedAgainAndAnsweredOnce(t *testing.T) {
	r := &scriptedRegistry{script: []attempt{
		{answers: []string{"nse-1"}, streamErr: grpcfdFault},
		{answers: []string{"nse-1", "nse-2"}},
	}}
	stream, err := clientOver(r).Find(context.Background(), oneShot)
	require.NoError(t, err)
	require.Equal(t, []string{"nse-1", "nse-2"}, readNames(t, stream), "the failed attempt's answer is not handed on")
	require.Equal(t, 2, r.finds)
}

func TestFindWhoseCallFailedWithoutCodeIsAskedAgain(t *testing.T) {
	r := &scriptedRegistry{script: []attempt{{callErr: grpcfdFault}, {answers: []string{"nse-1"}}}}
	stream, err := clientOver(r).Find(context.Background(), oneShot)
	require.NoError(t, err)
	require.Equal(t, []string{"nse-1"}, readNames(t, stream))
	require.Equal(t, 2, r.finds)
}

func TestFindThatKeepsFailingIsAskedThreeTimes(t *testing.T) {
	r := &scriptedRegistry{script: []attempt{{streamErr: grpcfdFault}}}
	_, err := clientOver(r).Find(context.Background(), oneShot)
	require.Equal(t, codes.Unknown, status.Code(err))
	require.ErrorContains(t, err, "file already closed")
	require.Equal(t, 3, r.finds)
}

func TestRegistrysAnswerWithCodeIsReturnedFromFindAtOnce(t *testing.T) {
	for _, code := range []codes.Code{codes.PermissionDenied, codes.NotFound, codes.Unavailable, codes.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			r := &scriptedRegistry{script: []attempt{{answers: []string{"nse-1"}, streamErr: status.Error(code, "from the registry")}}}
			stream, err := clientOver(r).Find(context.Background(), oneShot)
			require.Nil(t, stream, "an answer cut short is not handed on as a shorter list")
			require.Equal(t, code, status.Code(err))
			require.Equal(t, 1, r.finds)
		})
	}
}

func TestFindThatFailedOnThisSideIsNotAskedAgain(t *testing.T) {
	r := &scriptedRegistry{script: []attempt{{callErr: errors.New("can not dial to unix:///nsmgr.sock (TRANSIENT_FAILURE)")}, {answers: []string{"nse-1"}}}}
	_, err := clientOver(r).Find(context.Background(), oneShot)
	require.ErrorContains(t, err, "can not dial")
	require.Equal(t, 1, r.finds, "a Find waits on a missing connection once, not once per attempt")
}

func TestFindWhoseCallerIsGoneIsNotAskedAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &scriptedRegistry{script: []attempt{{streamErr: grpcfdFault}}}
	_, err := clientOver(r).Find(ctx, oneShot)
	require.Error(t, err)
	require.Equal(t, 1, r.finds)
}

// watchingRegistry answers a watching Find with one endpoint and keeps the stream open until its
// caller goes.
type watchingRegistry struct {
	registry.NetworkServiceEndpointRegistryClient
	finds int
}

func (r *watchingRegistry) Find(ctx context.Context, _ *registry.NetworkServiceEndpointQuery, _ ...grpc.CallOption) (registry.NetworkServiceEndpointRegistry_FindClient, error) {
	r.finds++
	ch := make(chan *registry.NetworkServiceEndpointResponse, 1)
	ch <- &registry.NetworkServiceEndpointResponse{NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: "nse-1"}}
	context.AfterFunc(ctx, func() { close(ch) })
	return streamchannel.NewNetworkServiceEndpointFindClient(ctx, ch), nil
}

func TestWatchingFindIsHandedOnAsItStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := &watchingRegistry{}
	client := chain.NewNetworkServiceEndpointRegistryClient(findretry.NewNetworkServiceEndpointRegistryClient(), r)
	stream, err := client.Find(ctx, &registry.NetworkServiceEndpointQuery{NetworkServiceEndpoint: &registry.NetworkServiceEndpoint{Name: "nse-1"}, Watch: true})
	require.NoError(t, err, "a watching Find is not read to an end it never reaches")
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, "nse-1", resp.GetNetworkServiceEndpoint().GetName())
	require.NoError(t, ctx.Err())
	require.Equal(t, 1, r.finds)
}
