package main

import (
	"context"
	"slices"
	"sync/atomic"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// readdressing moves the endpoint's clients to new addresses without a
// restart: the IPAM holds NSM_CIDR_PREFIX and NSM_READDRESS_CIDR_PREFIX, and
// once moved (SIGHUP) every Request excludes NSM_CIDR_PREFIX. sdk's
// point2pointipam then drops a connection's old addresses and their routes
// from the IP context and gives it new ones from the readdress prefix, on the
// connection's next refresh. The exclusion is not handed back to the client.
type readdressing struct {
	old   []string
	moved atomic.Bool
}

func (r *readdressing) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if !r.moved.Load() {
		return next.Server(ctx).Request(ctx, request)
	}
	conn := request.GetConnection()
	if conn.GetContext() == nil {
		conn.Context = &networkservice.ConnectionContext{}
	}
	if conn.GetContext().GetIpContext() == nil {
		conn.GetContext().IpContext = &networkservice.IPContext{}
	}
	ipContext := conn.GetContext().GetIpContext()
	var added []string
	for _, prefix := range r.old {
		if !slices.Contains(ipContext.GetExcludedPrefixes(), prefix) {
			added = append(added, prefix)
		}
	}
	ipContext.ExcludedPrefixes = append(ipContext.ExcludedPrefixes, added...)
	granted, err := next.Server(ctx).Request(ctx, request)
	if err != nil {
		return nil, err
	}
	if grantedIPContext := granted.GetContext().GetIpContext(); grantedIPContext != nil {
		grantedIPContext.ExcludedPrefixes = slices.DeleteFunc(grantedIPContext.ExcludedPrefixes, func(p string) bool {
			return slices.Contains(added, p)
		})
	}
	return granted, nil
}

func (r *readdressing) Close(ctx context.Context, conn *networkservice.Connection) (*emptypb.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}
