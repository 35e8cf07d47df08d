package xconnect

import (
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kerneltap"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/vethpair"
)

// newKernelMechanismServer is sdk-vpp's tap, or the veth pair recorded before it is made.
func newKernelMechanismServer(vppConn api.Connection, kind kernelif.Kind, j *journal.Journal) networkservice.NetworkServiceServer {
	if kind.Resolve() == kernelif.Tap {
		return kerneltap.NewServer(vppConn)
	}
	return vethpair.NewServer(vppConn, j)
}

func newKernelMechanismClient(vppConn api.Connection, kind kernelif.Kind, j *journal.Journal) networkservice.NetworkServiceClient {
	if kind.Resolve() == kernelif.Tap {
		return kerneltap.NewClient(vppConn)
	}
	return vethpair.NewClient(vppConn, j)
}
