package vethpair

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kernelvethpair/afpacket"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kernelvethpair/ipneighbor"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/kernel/kernelvethpair/mtu"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
)

type vethPairServer struct {
	journal *journal.Journal
}

// NewServer is sdk-vpp's kernelvethpair server whose pair is recorded in j before it is made.
func NewServer(vppConn api.Connection, j *journal.Journal) networkservice.NetworkServiceServer {
	return chain.NewNetworkServiceServer(
		ipneighbor.NewServer(vppConn),
		afpacket.NewServer(vppConn),
		mtu.NewServer(),
		&vethPairServer{journal: j},
	)
}

func (s *vethPairServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	id := request.GetConnection().GetId()
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := create(ctx, s.journal, id, conn, metadata.IsClient(s)); err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := s.Close(closeCtx, conn); closeErr != nil {
			err = errors.Wrapf(err, "connection closed with error: %s", closeErr.Error())
		}
		return nil, err
	}
	return conn, nil
}

func (s *vethPairServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	_ = del(ctx, metadata.IsClient(s))
	return next.Server(ctx).Close(ctx, conn)
}
