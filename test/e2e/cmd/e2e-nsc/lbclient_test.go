package main

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
)

const (
	testWait = 5 * time.Second
	testTick = 10 * time.Millisecond
)

// grantAddr is the rest of the chain: it grants the connection the address in addr.
type grantAddr struct{ addr *string }

func (g grantAddr) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn := request.GetConnection().Clone()
	conn.Context = &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{SrcIpAddrs: []string{*g.addr + "/32"}}}
	return conn, nil
}

func (grantAddr) Close(context.Context, *networkservice.Connection, ...grpc.CallOption) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// runs records which VIPs balance now.
type runs struct {
	mu      sync.Mutex
	started []string
	active  map[string]bool
}

type fakeRun struct {
	r   *runs
	vip string
}

func (f fakeRun) run(ctx context.Context) {
	f.r.mu.Lock()
	f.r.started = append(f.r.started, f.vip)
	f.r.active[f.vip] = true
	f.r.mu.Unlock()
	<-ctx.Done()
	f.r.mu.Lock()
	delete(f.r.active, f.vip)
	f.r.mu.Unlock()
}

func (r *runs) snapshot() ([]string, map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	active := map[string]bool{}
	for k, v := range r.active {
		active[k] = v
	}
	return append([]string(nil), r.started...), active
}

func TestTheBalancingFollowsTheConnectionsAddressAndEndsBeforeItsClose(t *testing.T) {
	r := &runs{active: map[string]bool{}}
	addr := "172.16.0.3"
	lb := newLBClient(context.Background(), func(_ string, vip net.IP) runner { return fakeRun{r, vip.String()} })
	c := chain.NewNetworkServiceClient(lb, grantAddr{&addr})
	request := &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{Id: "lb-0", NetworkService: "vl3-lb"}}

	conn, err := c.Request(context.Background(), request.Clone())
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, active := r.snapshot(); return active["172.16.0.3"] }, testWait, testTick)

	_, err = c.Request(context.Background(), request.Clone())
	require.NoError(t, err)
	started, _ := r.snapshot()
	require.Equal(t, []string{"172.16.0.3"}, started, "a refresh with the same address keeps the balancing")

	addr = "172.16.1.3"
	_, err = c.Request(context.Background(), request.Clone())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, active := r.snapshot()
		return active["172.16.1.3"] && !active["172.16.0.3"]
	}, testWait, testTick, "a new address: the old balancing stops, one for the new starts")

	_, err = c.Close(context.Background(), conn)
	require.NoError(t, err)
	_, active := r.snapshot()
	require.Empty(t, active, "the balancing is over when Close goes on")
}
