package xconnect

import (
	"context"
	"fmt"

	"github.com/golang/protobuf/ptypes/empty"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/postpone"
)

// newNextHopTagClient tags the VPP interface of a connection's next-hop side with the
// connection's ID, as sdk-vpp's tag client does (the journal records the tag, and restore
// releases an interface only while VPP still shows it), except an interface the connection did
// not make: on the untagged trunk (the vlan mechanism with VLAN 0) sdk-vpp's vlan client hands
// over the node device's own interface, and a tag would write a connection's ID on the node's NIC
// and leave it there after Close.
func newNextHopTagClient(vppConn api.Connection) networkservice.NetworkServiceClient {
	return &nextHopTagClient{vppConn: vppConn}
}

type nextHopTagClient struct {
	vppConn api.Connection
}

func (c *nextHopTagClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	postponeCtxFunc := postpone.ContextWithValues(ctx)
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	swIfIndex, ok := ifindex.Load(ctx, true)
	if !ok || onDeviceItself(conn) {
		return conn, nil
	}
	if _, err = interfaces.NewServiceClient(c.vppConn).SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{
		IsAdd: true, SwIfIndex: swIfIndex, Tag: conn.GetId(),
	}); err != nil {
		err = fmt.Errorf("tagging the next hop's interface %d: %w", swIfIndex, err)
		closeCtx, cancelClose := postponeCtxFunc()
		defer cancelClose()
		if _, closeErr := c.Close(closeCtx, conn, opts...); closeErr != nil {
			err = fmt.Errorf("%w; the connection's Close failed too: %v", err, closeErr)
		}
		return nil, err
	}
	return conn, nil
}

func (c *nextHopTagClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// onDeviceItself says whether conn's next-hop interface is a node device rather than one made
// for it: the remote vlan mechanism's VLAN 0.
func onDeviceItself(conn *networkservice.Connection) bool {
	mechanism := vlanmech.ToMechanism(conn.GetMechanism())
	return mechanism != nil && mechanism.GetVlanID() == 0
}
