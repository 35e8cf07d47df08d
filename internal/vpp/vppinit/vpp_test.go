package vppinit_test

import (
	"testing"

	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// startVPP runs a VPP of backend whose af_packet interfaces bind in the given node namespace, as
// VPP shares the forwarder's pod, with a recorded govpp connection to it over VPP's API socket.
func startVPP(t *testing.T, backend vpptest.Backend, node *vppsimtest.Netns) *vpptest.VPP {
	return vpptest.Start(t, backend, node)
}

// sent returns the requests of type T VPP received, in order.
func sent[T api.Message](v *vpptest.VPP) []T {
	return vpptest.RequestsOf[T](v)
}
