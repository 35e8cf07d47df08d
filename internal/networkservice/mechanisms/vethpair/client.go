package vethpair

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
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

type vethPairClient struct {
	journal *journal.Journal
}

// NewClient is sdk-vpp's kernelvethpair client whose pair is recorded in j before it is made.
func NewClient(vppConn api.Connection, j *journal.Journal) networkservice.NetworkServiceClient {
	return chain.NewNetworkServiceClient(
		ipneighbor.NewClient(vppConn),
		afpacket.NewClient(vppConn),
		mtu.NewClient(),
		&vethPairClient{journal: j},
	)
}

func (c *vethPairClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	request.MechanismPreferences = append(request.MechanismPreferences, &networkservice.Mechanism{
		Cls:        cls.LOCAL,
		Type:       kernel.MECHANISM,
		Parameters: make(map[string]string),
	})
	id := request.GetConnection().GetId()
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	if err := create(ctx, c.journal, id, conn, metadata.IsClient(c)); err != nil {
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := c.Close(closeCtx, conn, opts...); closeErr != nil {
			err = errors.Wrapf(err, "connection closed with error: %s", closeErr.Error())
		}
		return nil, err
	}
	return conn, nil
}

func (c *vethPairClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	_ = del(ctx, metadata.IsClient(c))
	return next.Client(ctx).Close(ctx, conn, opts...)
}
