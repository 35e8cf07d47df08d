package main

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/connect"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanismtranslation"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/passthrough/replacensename"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// A pass-through endpoint, as the passthrough endpoints of NSM's features/nse-composition: what
// it is asked for (hop 1) it asks onward for another network service through its nsmgr (hop 2),
// with the same path and IP context, so that the final endpoint's IPAM addresses both ends and
// one forwarder carries both hops of a local chain. It cross-connects its two kernel interfaces
// at layer 2, as the composition's VPP endpoints do with an l2 cross-connect: every frame that
// comes in on one leaves on the other (a tc ingress redirect each way), so nothing of the pod's
// own stack answers in between. Its pod neither answers ARP nor echo requests (passThroughPod),
// so a ping that works went through the whole chain.

// newPassThrough is the pass-through's part of the endpoint chain: the cross-connect's
// bookkeeping, then the onward Request.
func newPassThrough(ctx context.Context, connectTo *url.URL, onward, name string, dialTimeout time.Duration, dialOptions []grpc.DialOption) (networkservice.NetworkServiceServer, networkservice.NetworkServiceServer) {
	xc := newCrossConnects(ctx)
	onwardClient := client.NewClient(ctx,
		client.WithName(name),
		client.WithClientURL(connectTo),
		// Composed as NSM's pass-through endpoints (cmd-nse-firewall-vpp) compose their onward
		// client: no authorize client, no heal, no refresh.
		// Authorization: hop 2's path shares this endpoint's segment with hop 1's, and on a Close
		// that segment holds the token this endpoint signed for hop 1's caller (the forwarder).
		// sdk's client policies check the whole path before the Close goes out, and
		// tokens_chained.rego cannot chain that token to the nsmgr's segment after it: every
		// onward Close would be refused and hop 2 never closed. Hop 2's nsmgr authorizes it.
		// Heal and refresh: hop 1's client heals and refreshes the whole chain. sdk's monitor
		// server passes hop 2's events up to it, and its Requests reach hop 2 through this
		// endpoint. A heal of hop 2 here (a reselect: Close, then Request) would end hop 1's
		// connection in this endpoint and tell hop 1's side it is gone.
		client.WithAdditionalFunctionality(
			&onwardService{service: onward},
			replacensename.NewClient(),
			mechanismtranslation.NewClient(),
			&onwardInterface{},
			kernel.NewClient(),
			sendfd.NewClient(),
		),
		client.WithDialTimeout(dialTimeout),
		client.WithDialOptions(dialOptions...),
		client.WithoutRefresh(),
	)
	return xc, connect.NewServer(onwardClient)
}

// onwardService asks hop 2 for the onward service, and gives hop 1 back its own.
type onwardService struct{ service string }

func (s *onwardService) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	own := request.GetConnection().GetNetworkService()
	request.GetConnection().NetworkService = s.service
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	conn.NetworkService = own
	return conn, nil
}

func (s *onwardService) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	conn = conn.Clone()
	conn.NetworkService = s.service
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// onwardInterface tells the cross-connect which interface hop 2 put into the pod.
type onwardInterface struct{}

type onwardInterfaceKey struct{}

func (onwardInterface) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err == nil {
		if name, ok := ctx.Value(onwardInterfaceKey{}).(*string); ok {
			*name = conn.GetMechanism().GetParameters()[common.InterfaceNameKey]
		}
	}
	return conn, err
}

func (onwardInterface) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// crossConnects holds, per hop-1 connection, the pod's two interfaces to cross-connect, and
// keeps the redirects in place while the forwarder creates and re-creates the interfaces.
type crossConnects struct {
	mu    sync.Mutex
	pairs map[string][2]string
}

func newCrossConnects(ctx context.Context) *crossConnects {
	xc := &crossConnects{pairs: map[string][2]string{}}
	go xc.keep(ctx)
	return xc
}

func (xc *crossConnects) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	var onwardName string
	conn, err := next.Server(ctx).Request(context.WithValue(ctx, onwardInterfaceKey{}, &onwardName), request)
	if err != nil {
		return nil, err
	}
	own := conn.GetMechanism().GetParameters()[common.InterfaceNameKey]
	if own != "" && onwardName != "" {
		xc.mu.Lock()
		if xc.pairs[conn.GetId()] != [2]string{own, onwardName} {
			log.FromContext(ctx).Infof("pass-through: %s cross-connects %s and %s", conn.GetId(), own, onwardName)
		}
		xc.pairs[conn.GetId()] = [2]string{own, onwardName}
		xc.mu.Unlock()
	}
	return conn, nil
}

func (xc *crossConnects) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	xc.mu.Lock()
	delete(xc.pairs, conn.GetId())
	xc.mu.Unlock()
	return next.Server(ctx).Close(ctx, conn)
}

// keep puts each pair's redirects in place every keepInterval: the forwarder may create an
// interface after the Request returned, or create it again on a heal.
func (xc *crossConnects) keep(ctx context.Context) {
	ticker := time.NewTicker(keepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		xc.mu.Lock()
		pairs := make([][2]string, 0, len(xc.pairs))
		for _, p := range xc.pairs {
			pairs = append(pairs, p)
		}
		xc.mu.Unlock()
		for _, p := range pairs {
			if err := crossConnect(p[0], p[1]); err != nil {
				log.FromContext(ctx).Debugf("pass-through: cross-connect %s and %s: %v", p[0], p[1], err)
			}
		}
	}
}

const keepInterval = 100 * time.Millisecond
