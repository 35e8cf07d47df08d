// Package markedroutes composes the elements that own the forwarder's marked rules and routes in
// a client's namespace: policy rules and their tables (policyroute) and the main-table routes
// through the connection's interface (linkroutes).
//
// The forwarder's chain installs with it and a restarted forwarder cleans up with it. Both must
// use one composition: an element configured differently on the cleanup side would compute other
// table IDs or another mark and miss what the chain installed. The elements of one composition
// share their namespace views (see routeview): one subscription, one set of dumps and one lock per
// namespace.
package markedroutes

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/linkroutes"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/policyroute"
)

// NewServer returns policyroute then linkroutes, with the forwarder's options.
func NewServer() networkservice.NetworkServiceServer {
	registry := routeview.NewRegistry(routeview.ForwarderProtocol)
	return chain.NewNetworkServiceServer(
		policyroute.NewServer(policyroute.WithRegistry(registry)),
		linkroutes.NewServer(linkroutes.WithRegistry(registry)),
	)
}
