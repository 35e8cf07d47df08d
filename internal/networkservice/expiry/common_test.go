package expiry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/count"
	"github.com/networkservicemesh/sdk/pkg/tools/clock"
	"github.com/networkservicemesh/sdk/pkg/tools/clockmock"
)

func (r *registry) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

func connectionExpiringAt(id string, expires time.Time) *networkservice.Connection {
	return &networkservice.Connection{
		Id: id,
		Path: &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{
			{Name: "nsmgr", Id: "nsmgr-" + id, Expires: timestamppb.New(expires)},
			{Name: "forwarder", Id: id},
		}},
	}
}

func TestBookkeepingIsDroppedOnCloseAndOnExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clockMock := clockmock.New(ctx)
	ctx = clock.WithClock(ctx, clockMock)
	element := NewServer(ctx, WithGracePeriod(time.Second)).(*expiryServer)
	counter := new(count.Server)
	server := chain.NewNetworkServiceServer(element, counter)

	expires := clockMock.Now().Add(time.Minute)
	for _, id := range []string{"closed", "expiring"} {
		_, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: connectionExpiringAt(id, expires)})
		require.NoError(t, err)
	}
	require.Equal(t, 2, element.size())

	_, err := server.Close(ctx, connectionExpiringAt("closed", expires))
	require.NoError(t, err)
	require.Equal(t, 1, element.size(), "a closed connection must be forgotten")

	clockMock.Add(time.Minute)
	require.Never(t, func() bool { return counter.Closes() > 1 }, 100*time.Millisecond, 10*time.Millisecond, "released within the grace period")
	clockMock.Add(time.Second)
	require.Eventually(t, func() bool { return counter.Closes() == 2 }, time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return element.size() == 0 }, time.Second, 10*time.Millisecond, "a released connection must be forgotten")
}

func TestConnectionWithoutExpiryIsNotTracked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	element := NewServer(ctx).(*expiryServer)
	conn := connectionExpiringAt("no-expiry", time.Now())
	conn.GetPath().GetPathSegments()[0].Expires = nil

	_, err := chain.NewNetworkServiceServer(element).Request(ctx, &networkservice.NetworkServiceRequest{Connection: conn})
	require.NoError(t, err)
	require.Zero(t, element.size())
}
