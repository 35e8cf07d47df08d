package xconnect

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipaddress"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/ipneighbors"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/iprule"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/ipcontext/routes"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/mtu"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/networkservice/connectioncontextkernel/pinggrouprange"
)

// newKernelContextServer applies the connection's IP context to the client's kernel interface.
// It is sdk-kernel's connectioncontextkernel server spelled out so that policy routing (iprule)
// stays a single line to swap for this project's policy-route element.
func newKernelContextServer() networkservice.NetworkServiceServer {
	return chain.NewNetworkServiceServer(
		mtu.NewServer(),
		ipneighbors.NewServer(),
		iprule.NewServer(),
		routes.NewServer(),
		ipaddress.NewServer(),
		pinggrouprange.NewServer(),
	)
}
