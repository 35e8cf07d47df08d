package xconnect

import (
	"context"
	"io"
	"testing"

	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	registryapi "github.com/networkservicemesh/api/pkg/api/registry"
)

// findAnswer is what a fake registry answers to Find: these endpoints, then err (io.EOF for a
// complete answer).
type findAnswer struct {
	endpoints []*registryapi.NetworkServiceEndpointResponse
	err       error
}

type fakeRegistry struct {
	registryapi.NetworkServiceEndpointRegistryClient
	answer findAnswer
	asked  []*registryapi.NetworkServiceEndpointQuery
}

func (r *fakeRegistry) Find(_ context.Context, query *registryapi.NetworkServiceEndpointQuery, _ ...grpc.CallOption) (registryapi.NetworkServiceEndpointRegistry_FindClient, error) {
	r.asked = append(r.asked, query)
	return &findStream{answer: r.answer}, nil
}

type findStream struct {
	grpc.ClientStream
	answer findAnswer
}

func (s *findStream) Recv() (*registryapi.NetworkServiceEndpointResponse, error) {
	if len(s.answer.endpoints) == 0 {
		return nil, s.answer.err
	}
	next := s.answer.endpoints[0]
	s.answer.endpoints = s.answer.endpoints[1:]
	return next, nil
}

func listed(names ...string) []*registryapi.NetworkServiceEndpointResponse {
	var responses []*registryapi.NetworkServiceEndpointResponse
	for _, name := range names {
		responses = append(responses, &registryapi.NetworkServiceEndpointResponse{NetworkServiceEndpoint: &registryapi.NetworkServiceEndpoint{Name: name}})
	}
	return responses
}

// Only a complete answer without the endpoint means "not registered": a registry that fails
// midway must never turn an idle cut into a heal.
func TestEndpointLookupTrustsOnlyCompleteAnswers(t *testing.T) {
	broken := errors.New("stream broken")
	deleted := listed("nse-1")
	deleted[0].Deleted = true
	for name, tc := range map[string]struct {
		answer     findAnswer
		registered bool
		failed     bool
	}{
		"listed":                          {answer: findAnswer{endpoints: listed("nse-10", "nse-1"), err: io.EOF}, registered: true},
		"only a name containing it":       {answer: findAnswer{endpoints: listed("nse-10"), err: io.EOF}},
		"nothing":                         {answer: findAnswer{err: io.EOF}},
		"listed as deleted":               {answer: findAnswer{endpoints: deleted, err: io.EOF}},
		"broken before it was listed":     {answer: findAnswer{endpoints: listed("nse-10"), err: broken}, failed: true},
		"broken before anything was sent": {answer: findAnswer{err: broken}, failed: true},
	} {
		t.Run(name, func(t *testing.T) {
			registry := &fakeRegistry{answer: tc.answer}
			registered, err := endpointLookup(registry)(context.Background(), "nse-1")
			if tc.failed {
				require.ErrorIs(t, err, broken)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.registered, registered)
			require.Equal(t, "nse-1", registry.asked[0].GetNetworkServiceEndpoint().GetName())
		})
	}
}
