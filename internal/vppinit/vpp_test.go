package vppinit_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

// simVPP is a VPP simulator whose af_packet interfaces bind in the given node namespace, as VPP
// shares the forwarder's pod, and a govpp connection to it over VPP's API socket.
type simVPP struct {
	sim  *vppsim.Sim
	conn *core.Connection
}

func startVPP(t *testing.T, node *vppsimtest.Netns) *simVPP {
	sim := vppsimtest.StartSim(t, node.Name)
	return &simVPP{sim: sim, conn: vppsimtest.Dial(t, sim)}
}

// sent returns the requests of type T VPP received, in order.
func sent[T api.Message](v *simVPP) []T {
	return vppsim.RequestsOf[T](v.sim)
}

// names lists the requests VPP received by message name, in order.
func (v *simVPP) names() []string {
	var names []string
	for _, request := range v.sim.Requests() {
		names = append(names, request.GetMessageName())
	}
	return names
}

// interfaceNamed returns VPP's interface of that name; the test fails when VPP has none.
func (v *simVPP) interfaceNamed(t *testing.T, name string) *state.Interface {
	t.Helper()
	iface, ok := v.sim.State().InterfaceByName(name)
	require.True(t, ok, "VPP has no interface %s", name)
	return iface
}

// interfaceNames lists VPP's interfaces by name, in sw_if_index order.
func (v *simVPP) interfaceNames() []string {
	var names []string
	for _, iface := range v.sim.State().SortedInterfaces() {
		names = append(names, iface.Name)
	}
	return names
}

// aclTagged returns the index of VPP's ACL carrying tag; the test fails when VPP has none.
func (v *simVPP) aclTagged(t *testing.T, tag string) uint32 {
	t.Helper()
	for index, acl := range v.sim.State().ACLs {
		if acl.Tag == tag {
			return index
		}
	}
	t.Fatalf("VPP has no ACL tagged %s", tag)
	return 0
}
