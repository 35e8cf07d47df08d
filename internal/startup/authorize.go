package startup

import (
	"github.com/edwarnicke/genericsync"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/authorize"
	authmonitor "github.com/networkservicemesh/sdk/pkg/tools/monitorconnection/authorize"
)

// authorizeServers builds the OPA authorization of the forwarder's NSM API as the stock forwarder
// does: Request and Close run the sdk's default policies, and a MonitorConnections caller sees
// only the connections its own SPIFFE ID requested. The two share the SPIFFE ID to connection
// map that the first fills and the second reads.
func authorizeServers() (networkservice.NetworkServiceServer, networkservice.MonitorConnectionServer) {
	connectionsBySpiffeID := new(genericsync.Map[spiffeid.ID, *genericsync.Map[string, struct{}]])
	return authorize.NewServer(authorize.WithSpiffeIDConnectionMap(connectionsBySpiffeID)),
		authmonitor.NewMonitorConnectionServer(authmonitor.WithSpiffeIDConnectionMap(connectionsBySpiffeID))
}
