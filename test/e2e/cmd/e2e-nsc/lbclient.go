package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	registryrecvfd "github.com/networkservicemesh/sdk/pkg/registry/common/recvfd"
	registrysendfd "github.com/networkservicemesh/sdk/pkg/registry/common/sendfd"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// lbClient makes the client a vl3 load balancer, as cmd-lb-vl3-vpp is: once its connection to
// the vl3 network is granted, its vl3 address is the VIP, and the balancing (balancing.run)
// follows the service's servers until the connection closes. A new address (a heal onto
// another endpoint) starts the balancing again for it.
type lbClient struct {
	chainCtx  context.Context
	newRunner func(service string, vip net.IP) runner

	mu      sync.Mutex
	running map[string]*lbRun // by connection ID
}

// runner is what balances for one VIP until its context ends (balancing).
type runner interface {
	run(ctx context.Context)
}

type lbRun struct {
	vip    net.IP
	cancel context.CancelFunc
	done   chan struct{}
}

func newLBClient(chainCtx context.Context, newRunner func(service string, vip net.IP) runner) *lbClient {
	return &lbClient{chainCtx: chainCtx, newRunner: newRunner, running: map[string]*lbRun{}}
}

func (c *lbClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	address := vip(conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if run, ok := c.running[conn.GetId()]; ok {
		if run.vip.Equal(address) {
			return conn, nil
		}
		run.stop()
		delete(c.running, conn.GetId())
	}
	if address == nil {
		return conn, nil
	}
	runCtx, cancel := context.WithCancel(c.chainCtx)
	run := &lbRun{vip: address, cancel: cancel, done: make(chan struct{})}
	c.running[conn.GetId()] = run
	b := c.newRunner(conn.GetNetworkService(), address)
	go func() {
		defer close(run.done)
		b.run(runCtx)
	}()
	return conn, nil
}

func (c *lbClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*emptypb.Empty, error) {
	c.mu.Lock()
	if run, ok := c.running[conn.GetId()]; ok {
		// The balancing goes before the connection: nothing is left in the pod.
		run.stop()
		delete(c.running, conn.GetId())
	}
	c.mu.Unlock()
	return next.Client(ctx).Close(ctx, conn, opts...)
}

func (r *lbRun) stop() {
	r.cancel()
	<-r.done
}

// newLoadBalancer is the load balancer's client chain element for cfg.
func newLoadBalancer(ctx context.Context, cfg *config, dialOptions []grpc.DialOption) (*lbClient, error) {
	protocol := strings.ToLower(cfg.Protocol)
	if protocol != "tcp" && protocol != "udp" {
		return nil, fmt.Errorf("invalid NSM_PROTOCOL=%q: must be TCP or UDP", cfg.Protocol)
	}
	if cfg.Port == 0 {
		return nil, errors.New("invalid NSM_PORT=0: must be a port")
	}
	targetPort := cfg.TargetPort
	if targetPort == 0 {
		targetPort = cfg.Port
	}
	// As the vl3lb's: unix URLs of local endpoints come as the endpoints' sockets.
	finder := nsmgrpc.EndpointRegistryClient(ctx, &cfg.ConnectTo, cfg.DialTimeout, dialOptions,
		registryrecvfd.NewNetworkServiceEndpointRegistryClient(),
		registrysendfd.NewNetworkServiceEndpointRegistryClient())
	return newLBClient(ctx, func(service string, vip net.IP) runner {
		return &balancing{
			service: service, finder: finder, dialOpts: dialOptions,
			servers: newServerSet(cfg.Selector),
			nat:     &natBalancer{vip: vip, protocol: protocol, port: cfg.Port, targetPort: targetPort},
		}
	}), nil
}
