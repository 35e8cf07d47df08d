package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/streamchannel"
)

// A crashed vl3 endpoint stays registered until its registration expires. A new endpoint that
// cannot reach it must still peer with the live ones and start, as upstream's logs the failed
// request and goes on to the next endpoint.
func TestPeeringGoesPastAnEndpointItCannotReach(t *testing.T) {
	earlier := timestamppb.New(time.Now().Add(-time.Minute))
	p := &peering{
		cfg: &config{Name: "nse-vl3-2b", ServiceNames: []string{"vl3"}, RequestTimeout: time.Second},
		finder: &listedEndpoints{nses: []*registryapi.NetworkServiceEndpoint{
			{Name: "nse-vl3-2", InitialRegistrationTime: earlier},
			{Name: "nse-vl3-1", InitialRegistrationTime: earlier},
			{Name: "nse-vl3-2b", InitialRegistrationTime: timestamppb.Now()},
		}},
		client: &reachable{live: map[string]bool{"nse-vl3-1": true}},
	}
	self := &registryapi.NetworkServiceEndpoint{Name: "nse-vl3-2b", InitialRegistrationTime: timestamppb.Now()}
	require.NoError(t, p.connectToEarlierEndpoints(context.Background(), self))
	require.Len(t, p.conns, 1)
	require.Equal(t, "nse-vl3-1", p.conns[0].GetNetworkServiceEndpointName())
}

// listedEndpoints is a registry whose Find lists nses.
type listedEndpoints struct {
	registryapi.NetworkServiceEndpointRegistryClient
	nses []*registryapi.NetworkServiceEndpoint
}

func (l *listedEndpoints) Find(ctx context.Context, _ *registryapi.NetworkServiceEndpointQuery, _ ...grpc.CallOption) (registryapi.NetworkServiceEndpointRegistry_FindClient, error) {
	ch := make(chan *registryapi.NetworkServiceEndpointResponse, len(l.nses))
	for _, nse := range l.nses {
		ch <- &registryapi.NetworkServiceEndpointResponse{NetworkServiceEndpoint: nse}
	}
	close(ch)
	return streamchannel.NewNetworkServiceEndpointFindClient(ctx, ch), nil
}

// reachable grants a request only to the live endpoints.
type reachable struct{ live map[string]bool }

func (r *reachable) Request(_ context.Context, request *networkservice.NetworkServiceRequest, _ ...grpc.CallOption) (*networkservice.Connection, error) {
	if !r.live[request.GetConnection().GetNetworkServiceEndpointName()] {
		return nil, errors.New("connection refused")
	}
	return request.GetConnection(), nil
}

func (r *reachable) Close(context.Context, *networkservice.Connection, ...grpc.CallOption) (*emptypb.Empty, error) {
	return new(emptypb.Empty), nil
}
