package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/golang/protobuf/ptypes/empty"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/ifindex"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// aclRelease releases, on Close, the ACLs sdk-vpp's acl server put on the connection's incoming
// interface; it goes just before that server in the chain. sdk-vpp v1.18.0's acl server leaks
// them: its Close deletes the ACLs before the interface is gone, which VPP refuses for an ACL
// still applied to an interface (ACL_IN_USE_INBOUND/OUTBOUND), and it deletes the ACLs numbered
// 0 to n-1 rather than the ones it created. So every connection through cmd-nse-firewall-vpp
// leaves its two ACLs in the endpoint's VPP. Here the interface's ACL list is read back from VPP,
// emptied, and each of its ACLs deleted, before sdk-vpp's Close runs (whose deletions then fail
// harmlessly: nothing is left of these, and the others are in use).
type aclRelease struct{ vppConn api.Connection }

func (a *aclRelease) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(ctx, request)
}

func (a *aclRelease) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	if swIfIndex, ok := ifindex.Load(ctx, false); ok {
		if err := a.release(ctx, swIfIndex); err != nil {
			log.FromContext(ctx).Errorf("releasing the ACLs of interface %d: %v", swIfIndex, err)
		}
	}
	return next.Server(ctx).Close(ctx, conn)
}

func (a *aclRelease) release(ctx context.Context, swIfIndex interface_types.InterfaceIndex) error {
	client := acl.NewServiceClient(a.vppConn)
	stream, err := client.ACLInterfaceListDump(ctx, &acl.ACLInterfaceListDump{SwIfIndex: swIfIndex})
	if err != nil {
		return err
	}
	var applied []uint32
	err = vppdump.Drain(stream.Recv, fmt.Sprintf("the ACL list of interface %d", swIfIndex), func(details *acl.ACLInterfaceListDetails) {
		if details.SwIfIndex == swIfIndex {
			applied = append(applied, details.Acls...)
		}
	})
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		return nil
	}
	if _, err = client.ACLInterfaceSetACLList(ctx, &acl.ACLInterfaceSetACLList{SwIfIndex: swIfIndex}); err != nil {
		return fmt.Errorf("emptying the list: %w", err)
	}
	var errs []error
	for _, index := range applied {
		if _, delErr := client.ACLDel(ctx, &acl.ACLDel{ACLIndex: index}); delErr != nil {
			errs = append(errs, fmt.Errorf("ACL %d: %w", index, delErr))
		}
	}
	return errors.Join(errs...)
}
