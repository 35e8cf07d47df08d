package restore

import (
	"context"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	kernellink "github.com/networkservicemesh/sdk-kernel/pkg/kernel"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

// detachUnrecordedLink drops the interface from conn, a recorded connection about to be closed on
// the kernel cleanup chain in its opened namespace, unless the namespace's link of that name is
// the one the record holds (same index and MAC). A link that took the name later belongs to
// another connection, a client restarted in its pod for one: by name, the cleanup would delete
// that connection's routes and rules as this one's. Without an interface the cleanup removes only
// what this connection's ID proves its own (see policyroute), which is all it left once its link
// went. A record that holds no link keeps the name, as before links were recorded.
func detachUnrecordedLink(ctx context.Context, rec *journal.Record, recordedNetns string, conn *networkservice.Connection) {
	mechanism := kernel.ToMechanism(conn.GetMechanism())
	name := mechanism.GetInterfaceName()
	recorded := recordedLink(rec, recordedNetns, name)
	if recorded == nil {
		return
	}
	handle, err := kernellink.GetNetlinkHandle(mechanism.GetNetNSURL())
	if err == nil {
		defer handle.Close()
		current, linkErr := handle.LinkByName(name)
		if linkErr == nil && current.Attrs().Index == recorded.Index && current.Attrs().HardwareAddr.String() == recorded.MAC {
			return
		}
	}
	log.FromContext(ctx).Infof("restore: connection %s: %s is not the recorded interface (index %d, %s) any more; only what the connection's ID proves its own is released",
		rec.ID, name, recorded.Index, recorded.MAC)
	mechanism.SetInterfaceName("")
}

// recordedLink is the client's link the record holds under name in the namespace recordedNetns.
func recordedLink(rec *journal.Record, recordedNetns, name string) *journal.Link {
	for _, state := range rec.States() {
		if side, ok := state.Side(false); ok && side.Link != nil && side.Link.Name == name && side.Link.Netns == recordedNetns {
			return side.Link
		}
	}
	return nil
}
