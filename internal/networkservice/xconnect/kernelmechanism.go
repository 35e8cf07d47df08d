package xconnect

import (
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kerneltap"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kernelvethpair"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
)

func newKernelMechanismServer(vppConn api.Connection, kind kernelif.Kind) networkservice.NetworkServiceServer {
	if kind.Resolve() == kernelif.Tap {
		return kerneltap.NewServer(vppConn)
	}
	return kernelvethpair.NewServer(vppConn)
}

func newKernelMechanismClient(vppConn api.Connection, kind kernelif.Kind) networkservice.NetworkServiceClient {
	if kind.Resolve() == kernelif.Tap {
		return kerneltap.NewClient(vppConn)
	}
	return kernelvethpair.NewClient(vppConn)
}
