package vppinit

import (
	"context"
	"net"

	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/acl_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"

	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
)

// The uplink is shared with the kernel: VPP must not answer the node's own traffic. Everything is
// denied except the ICMPv6 neighbour discovery VPP needs to reach its next hops; the pinhole
// element prepends a permit for each tunnel port as connections come.
const (
	ingressACLTag = "nsm-vppinit-denyall-ingress"
	egressACLTag  = "nsm-vppinit-denyall-egress"

	icmp6RouterSolicitation    = 133
	icmp6RouterAdvertisement   = 134
	icmp6NeighborSolicitation  = 135
	icmp6NeighborAdvertisement = 136
)

var (
	anyIPv4 = types.ToVppPrefix(&net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)})
	anyIPv6 = types.ToVppPrefix(&net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)})
)

func denyAllOnUplink(ctx context.Context, vppConn api.Connection, swIfIndex interface_types.InterfaceIndex) error {
	ingress, err := addACL(ctx, vppConn, ingressACLTag, icmp6RouterAdvertisement, icmp6NeighborAdvertisement)
	if err != nil {
		return err
	}
	egress, err := addACL(ctx, vppConn, egressACLTag, icmp6RouterSolicitation, icmp6NeighborSolicitation)
	if err != nil {
		return err
	}
	request := &acl.ACLInterfaceSetACLList{SwIfIndex: swIfIndex, Count: 2, NInput: 1, Acls: []uint32{ingress, egress}}
	return timed(ctx, "ACLInterfaceSetACLList", func() error {
		_, err := acl.NewServiceClient(vppConn).ACLInterfaceSetACLList(ctx, request)
		return err
	})
}

// addACL creates an ACL permitting the given ICMPv6 types and denying everything else.
func addACL(ctx context.Context, vppConn api.Connection, tag string, permittedICMP6Types ...uint16) (uint32, error) {
	var rules []acl_types.ACLRule
	for _, icmpType := range permittedICMP6Types {
		rules = append(rules, acl_types.ACLRule{
			IsPermit:               acl_types.ACL_ACTION_API_PERMIT,
			SrcPrefix:              anyIPv6,
			DstPrefix:              anyIPv6,
			Proto:                  ip_types.IP_API_PROTO_ICMP6,
			SrcportOrIcmptypeFirst: icmpType,
			SrcportOrIcmptypeLast:  icmpType,
		})
	}
	rules = append(rules,
		acl_types.ACLRule{IsPermit: acl_types.ACL_ACTION_API_DENY, SrcPrefix: anyIPv4, DstPrefix: anyIPv4},
		acl_types.ACLRule{IsPermit: acl_types.ACL_ACTION_API_DENY, SrcPrefix: anyIPv6, DstPrefix: anyIPv6},
	)
	// ^uint32(0) asks VPP for a new ACL rather than replacing an existing index.
	request := &acl.ACLAddReplace{ACLIndex: ^uint32(0), Tag: tag, Count: uint32(len(rules)), R: rules}
	var reply *acl.ACLAddReplaceReply
	err := timed(ctx, "ACLAddReplace", func() (err error) {
		reply, err = acl.NewServiceClient(vppConn).ACLAddReplace(ctx, request)
		return err
	})
	if err != nil {
		return 0, err
	}
	return reply.ACLIndex, nil
}
