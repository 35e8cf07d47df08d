package journal

import (
	"context"
	"slices"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// NewBridgeDomainServer returns the element that records the VPP bridge domain a remote vlan
// connection's interfaces are members of, as soon as sdk-vpp's l2bridgedomain has made it: in the
// connection's intent at once, and in the committed state (through the connection's metadata) when
// the Request completes. l2bridgedomain keeps its bridge domains in memory only, so without this a
// restarted forwarder would never delete the previous run's: the release of a recorded connection
// deletes its bridge domain once VPP shows it without members (see restore). Place it right above
// sdk-vpp's l2bridgedomain server.
//
// The domain is found by asking VPP which one holds the connection's next-hop side (the VLAN
// sub-interface, l2bridgedomain's key): VPP numbers new domains, so nothing can be recorded before
// it exists, and a forwarder killed between the two leaves that one domain unrecorded.
func NewBridgeDomainServer(j *Journal, vppConn api.Connection) networkservice.NetworkServiceServer {
	return &bridgeDomainServer{journal: j, vppConn: vppConn}
}

type bridgeDomainServer struct {
	journal *Journal
	vppConn api.Connection
}

type bridgeDomainsKey struct{}

func (s *bridgeDomainServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	id := request.GetConnection().GetId()
	if _, bridged := vlan.Load(ctx, true); !bridged {
		metadata.Map(ctx, false).Delete(bridgeDomainsKey{})
		return conn, nil
	}
	member, ok := ifindex.Load(ctx, true)
	if !ok {
		return conn, nil
	}
	bridgeDomain, found, err := bridgeDomainOf(ctx, s.vppConn, member)
	switch {
	case err != nil:
		log.FromContext(ctx).Warnf("journal: the bridge domain of connection %s: %v", id, err)
		return conn, nil
	case !found:
		metadata.Map(ctx, false).Delete(bridgeDomainsKey{})
		return conn, nil
	}
	metadata.Map(ctx, false).Store(bridgeDomainsKey{}, []uint32{bridgeDomain})
	if err := s.journal.NoteBridgeDomain(id, bridgeDomain); err != nil {
		log.FromContext(ctx).Warnf("journal: recording the bridge domain of connection %s: %v", id, err)
	}
	return conn, nil
}

func (s *bridgeDomainServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// loadBridgeDomains are the bridge domains NewBridgeDomainServer found for the connection.
func loadBridgeDomains(ctx context.Context) []uint32 {
	if value, ok := metadata.Map(ctx, false).Load(bridgeDomainsKey{}); ok {
		return slices.Clone(value.([]uint32))
	}
	return nil
}

// bridgeDomainOf asks VPP which bridge domain member is in: every domain is listed with its
// members, and the one that has member is it.
func bridgeDomainOf(ctx context.Context, vppConn api.Connection, member interface_types.InterfaceIndex) (id uint32, found bool, err error) {
	stream, err := l2.NewServiceClient(vppConn).BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		return 0, false, errors.Wrap(err, "bridge_domain_dump")
	}
	err = vppdump.Drain(stream.Recv, "bridge domains", func(details *l2.BridgeDomainDetails) {
		for _, i := range details.SwIfDetails {
			if i.SwIfIndex == member && !found {
				id, found = details.BdID, true
			}
		}
	})
	if err != nil {
		return 0, false, errors.Wrap(err, "bridge_domain_dump")
	}
	return id, found, nil
}

// NoteBridgeDomain records into the intent of connection id a bridge domain its interfaces were
// made members of, as NoteCreating does for an interface. Nothing is written when the record
// names it already or when no Request began on id.
func (j *Journal) NoteBridgeDomain(id string, bridgeDomain uint32) error {
	return j.noteInIntent(id,
		func(s *State) bool { return s.holdsBridgeDomain(bridgeDomain) },
		func(rec *Record) { rec.Intent.BridgeDomains = append(rec.Intent.BridgeDomains, bridgeDomain) })
}

// holdsBridgeDomain is whether the state names bridgeDomain. Nil-safe.
func (s *State) holdsBridgeDomain(bridgeDomain uint32) bool {
	return s != nil && slices.Contains(s.BridgeDomains, bridgeDomain)
}

// BridgeDomains are the bridge domains every state of the record names, superseded ones
// included, each once.
func (r *Record) BridgeDomains() []uint32 {
	var all []uint32
	for _, s := range r.InterfaceStates() {
		for _, bd := range s.BridgeDomains {
			if !slices.Contains(all, bd) {
				all = append(all, bd)
			}
		}
	}
	return all
}
