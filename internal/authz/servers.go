package authz

import (
	"github.com/edwarnicke/genericsync"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	authmonitor "github.com/networkservicemesh/sdk/pkg/tools/monitorconnection/authorize"
)

// Servers returns the Request/Close authorization and the MonitorConnections authorization. They
// share the SPIFFE ID to connection map that the first fills and the second reads.
func Servers() (networkservice.NetworkServiceServer, networkservice.MonitorConnectionServer) {
	connectionsBySpiffeID := new(genericsync.Map[spiffeid.ID, *genericsync.Map[string, struct{}]])
	return authorize.NewServer(authorize.WithSpiffeIDConnectionMap(connectionsBySpiffeID)),
		authmonitor.NewMonitorConnectionServer(authmonitor.WithSpiffeIDConnectionMap(connectionsBySpiffeID))
}
