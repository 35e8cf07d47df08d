package main

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	vlanmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/vlan"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// viaLabel is the connection label sdk-vpp's vlan mechanism reads to pick the host device (the
// forwarder's NSM_DEVICE_SELECTOR_FILE maps its value to a device).
const viaLabel = "via"

// remoteVlan answers the vlan mechanism the forwarder offers with where the service lives: the
// VLAN ID, and the via label naming the trunk. It sets no MTU, so that the forwarder's vlan
// mechanism takes the trunk's.
type remoteVlan struct {
	vlanID uint32
	via    string
}

func (v *remoteVlan) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	conn := request.GetConnection()
	if mechanism := vlanmech.ToMechanism(conn.GetMechanism()); mechanism != nil {
		mechanism.SetVlanID(v.vlanID)
		if conn.Labels == nil {
			conn.Labels = map[string]string{}
		}
		conn.Labels[viaLabel] = v.via
	}
	if conn.GetContext() == nil {
		conn.Context = &networkservice.ConnectionContext{}
	}
	conn.GetContext().MTU = 0
	return next.Server(ctx).Request(ctx, request)
}

func (v *remoteVlan) Close(ctx context.Context, conn *networkservice.Connection) (*emptypb.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
