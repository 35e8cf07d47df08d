package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/client"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/clientinfo"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/retry"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/upstreamrefresh"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/mtu/vl3mtu"
)

// selfConnection is the endpoint's connection to itself, as cmd-nse-vl3-vpp's: a kernel
// connection of its own service, asked of this endpoint by name through the nsmgr and the
// forwarder, so that its pod has an interface and an address in the vl3 network. Its DNS server
// is reached at that address, and its own names point at it (the vl3 DNS server records the
// connection as any client's, from the podName label sdk's clientinfo takes from POD_NAME).
// The forwarder joins the pod's interface to a memif into the endpoint's own VPP, so the
// connection is only made with a VPP: in the kernel data plane both ends would be one namespace.
type selfConnection struct {
	cfg    *config
	client networkservice.NetworkServiceClient
	conn   *networkservice.Connection
}

// connectToItself requests the connection (within ctx), composed as upstream's client is from
// the sdk. The client lives as long as chainCtx: the connection is closed after ctx's end.
func connectToItself(chainCtx, ctx context.Context, cfg *config, dialOptions []grpc.DialOption) (*selfConnection, error) {
	c := client.NewClient(chainCtx,
		client.WithName(cfg.Name),
		client.WithClientURL(&cfg.ConnectTo),
		client.WithAuthorizeClient(authorize.NewClient()),
		client.WithHealClient(heal.NewClient(chainCtx)),
		client.WithAdditionalFunctionality(
			upstreamrefresh.NewClient(chainCtx, upstreamrefresh.WithLocalNotifications()),
			vl3mtu.NewClient(),
			clientinfo.NewClient(),
			kernel.NewClient(),
			sendfd.NewClient(),
		),
		client.WithDialTimeout(cfg.DialTimeout),
		client.WithDialOptions(dialOptions...),
	)
	s := &selfConnection{cfg: cfg, client: retry.NewClient(c, retry.WithTryTimeout(cfg.RequestTimeout))}
	requestCtx, cancel := context.WithTimeout(ctx, 4*cfg.RequestTimeout)
	defer cancel()
	conn, err := s.client.Request(requestCtx, &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{
			// Upstream's ID: the same after a restart of the endpoint.
			Id:                         cfg.Name + "-kernel",
			NetworkServiceEndpointName: cfg.Name,
			NetworkService:             cfg.ServiceNames[0],
			Payload:                    cfg.Payload,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to itself: %w", err)
	}
	s.conn = conn
	if s.addr() == nil {
		return nil, errors.Join(fmt.Errorf("connect to itself: no source address in %v", conn.GetContext().GetIpContext()), s.close())
	}
	return s, nil
}

// addr is the pod's address in the vl3 network: the connection's first source address.
func (s *selfConnection) addr() net.IP {
	nets := s.conn.GetContext().GetIpContext().GetSrcIPNets()
	if len(nets) == 0 {
		return nil
	}
	return nets[0].IP
}

// close closes the connection; nil closes nothing (the kernel data plane makes none).
func (s *selfConnection) close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	if _, err := s.client.Close(ctx, s.conn); err != nil {
		return fmt.Errorf("close the connection to itself: %w", err)
	}
	return nil
}
