package xconnect

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipaddress"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipneighbors"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/mtu"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/pinggrouprange"

	"github.com/nsmfwd/forwarder-vpp/internal/markedroutes"
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
