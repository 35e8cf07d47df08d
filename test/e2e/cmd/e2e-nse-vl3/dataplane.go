package main

import (
	"context"
	"fmt"
	"os"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/heal"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/recvfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
)

// dataplane is where the endpoint's connections end: the elements after the vl3 ones (IPAM,
// DNS) on the server side, for its clients' and its peers' connections, and on the client side,
// for its own peering connections.
type dataplane struct {
	// what names it in the endpoint's log.
	what   string
	server []networkservice.NetworkServiceServer
	client []networkservice.NetworkServiceClient
	// heal are the peering client's heal options (a data-path liveness check where there is one).
	heal []heal.Option
	// close releases what the data plane holds once the chains are done.
	close func()
	// connectsToItself makes the endpoint's kernel connection to itself (self.go): with a VPP,
	// where that connection's two ends are the pod's kernel and the VPP.
	connectsToItself bool
}

// kernelDataplane routes in the pod's kernel: every connection, client or peer, is a kernel
// interface in this namespace, and the pod's IP forwarding carries packets between them.
func kernelDataplane() (*dataplane, error) {
	if err := enableForwarding(); err != nil {
		return nil, err
	}
	return &dataplane{
		what: "the pod's kernel",
		server: []networkservice.NetworkServiceServer{
			recvfd.NewServer(),
			mechanisms.NewServer(map[string]networkservice.NetworkServiceServer{
				kernelmech.MECHANISM: kernel.NewServer(),
			}),
			sendfd.NewServer(),
		},
		client: []networkservice.NetworkServiceClient{
			// Offers the kernel mechanism in this pod, under a name of its own.
			kernel.NewClient(),
			sendfd.NewClient(),
		},
		close: func() {},
	}, nil
}

// newDataplane is the endpoint's own VPP when it has one (NSM_VPP_API_SOCKET), as upstream's,
// and the pod's kernel otherwise (the simulator runs no VPP in pods).
func newDataplane(ctx context.Context, cfg *config) (*dataplane, error) {
	if cfg.VppAPISocket == "" {
		return kernelDataplane()
	}
	return vppDataplane(ctx, cfg)
}

// enableForwarding lets this pod's kernel route, in both families, between its clients and
// between its clients and the other endpoints'.
func enableForwarding() error {
	for _, knob := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
		if err := os.WriteFile(knob, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("enable IP forwarding in the endpoint pod: %w", err)
		}
	}
	return nil
}
