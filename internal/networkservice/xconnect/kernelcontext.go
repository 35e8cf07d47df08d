package xconnect

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipaddress"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipneighbors"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/iptables4nattemplate"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/mtu"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/pinggrouprange"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/routelocalnet"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/linkroutes"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
)

// newKernelContextServer applies the connection's IP context to the client's kernel interface.
// It is sdk-kernel's connectioncontextkernel server with this project's reconciling elements in
// place of iprule and routes, which only ever add: policy tables and main-table routes both
// follow the IP context exactly across heals and restarts.
func newKernelContextServer() networkservice.NetworkServiceServer {
	return chain.NewNetworkServiceServer(
		mtu.NewServer(),
		ipneighbors.NewServer(),
		markedroutes.NewServer(),
		ipaddress.NewServer(),
		pinggrouprange.NewServer(),
	)
}

// newKernelContextClient applies the connection's IP context to the endpoint's kernel interface. It
// is sdk-kernel's connectioncontextkernel client with linkroutes in place of routes, so the
// endpoint's side follows the IP context as exactly as the client's: addresses are reconciled by
// ipaddress on both sides, routes and their next hops by linkroutes.
func newKernelContextClient() networkservice.NetworkServiceClient {
	return chain.NewNetworkServiceClient(
		mtu.NewClient(),
		ipneighbors.NewClient(),
		linkroutes.NewClient(),
		ipaddress.NewClient(),
		routelocalnet.NewClient(),
		iptables4nattemplate.NewClient(),
		pinggrouprange.NewClient(),
	)
}
