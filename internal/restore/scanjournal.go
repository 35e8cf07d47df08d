package restore

import (
	"context"

	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/journal"
)

// scanJournal returns a leftover for every connection the journal holds.
func scanJournal(j *journal.Journal, kernelCleanup networkservice.NetworkServiceServer) []leftover {
	if j == nil {
		return nil
	}
	var found []leftover
	for _, conn := range j.Connections() {
		found = append(found, leftover{
			owner:       conn.GetId(),
			description: "kernel state recorded in the journal",
			dropOnClaim: true,
			release: func(ctx context.Context) error {
				if err := closeRecorded(ctx, kernelCleanup, conn); err != nil {
					return err
				}
				return j.Forget(conn.GetId())
			},
		})
	}
	return found
}

// closeRecorded closes conn on kernelCleanup in the namespace it was recorded with. A namespace
// that no longer exists took the connection's rules and routes with it: nothing is left to close.
func closeRecorded(ctx context.Context, kernelCleanup networkservice.NetworkServiceServer, conn *networkservice.Connection) error {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	netnsURL, found, err := resolveNetNS(mechanism.GetNetNSURL())
	if err != nil {
		return err
	}
	if !found {
		log.FromContext(ctx).Infof("restore: the namespace of connection %s (%s) is gone, and its kernel state with it", conn.GetId(), mechanism.GetNetNSURL())
		return nil
	}
	mechanism.SetNetNSURL(netnsURL)
	_, err = kernelCleanup.Close(ctx, conn)
	return errors.Wrap(err, "closing the recorded connection")
}
