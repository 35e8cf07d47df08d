package restore

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

type restoreClient struct {
	leftovers *Leftovers
}

// NewClient returns the element of the onward chain that adopts or releases the next hop's side of
// a connection NewServer claimed, once the next hop answered: adopted when the answer describes
// exactly what the previous run built, released otherwise. Place it behind every mechanism element
// of the onward chain and behind recvfd, which names the endpoint's namespace. A next hop the
// connection no longer goes to is told to close its side (Leftovers.CloseNextHopsWith).
func NewClient(leftovers *Leftovers) networkservice.NetworkServiceClient {
	return &restoreClient{leftovers: leftovers}
}

func (c *restoreClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	lo := claimed(ctx)
	if lo != nil && request.GetConnection().GetMechanism() == nil {
		// A restarted run has no memory of the mechanism the next hop chose: without it, an
		// endpoint names its interface anew and a vxlan peer picks another VNI, and nothing
		// could be adopted. The previous run's choice goes along, as its own refreshes did.
		request.GetConnection().Mechanism = previousMechanism(lo.rec)
	}
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if lo != nil {
		c.leftovers.adopter.side(ctx, lo.rec, conn, true)
		c.leftovers.closeNextHopOf(ctx, abandonedNextHop(lo.rec.Committed.GetOutgoing(), conn, request.GetConnection().GetPath().GetIndex()))
	}
	return conn, nil
}

// previousMechanism is the mechanism the next hop chose for the previous run, as a refresh of
// that run would have asked for it: a kernel interface by its name (the endpoint's namespace goes
// with a descriptor only the endpoint can send), a vxlan tunnel by its addresses, ports and VNI.
func previousMechanism(rec *journal.Record) *networkservice.Mechanism {
	previous := rec.Committed.GetOutgoing().GetMechanism()
	switch previous.GetType() {
	case kernel.MECHANISM:
		mechanism := previous.Clone()
		mechanism.Parameters = map[string]string{kernel.InterfaceNameKey: kernel.ToMechanism(previous).GetInterfaceName()}
		return mechanism
	case vxlan.MECHANISM:
		return previous.Clone()
	default:
		return nil
	}
}

func (c *restoreClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}
