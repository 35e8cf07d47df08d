package vpp

import (
	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/acl_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

func (v *VPP) registerACL() {
	on(v, v.aclAddReplace)
	on(v, v.aclDel)
	on(v, v.aclDump)
	on(v, v.aclInterfaceSetACLList)
	on(v, v.aclInterfaceListDump)
}

// aclAddReplace creates an ACL (index ~0) or replaces an existing one's rules.
func (v *VPP) aclAddReplace(_ *server.Session, req *acl.ACLAddReplace) []api.Message {
	index := req.ACLIndex
	if index == anyIndex {
		for index = 0; v.state.ACLs[index] != nil; index++ {
		}
	} else if _, ok := v.state.ACLs[index]; !ok {
		return one(&acl.ACLAddReplaceReply{ACLIndex: index, Retval: retval(api.INVALID_VALUE)})
	}
	v.state.ACLs[index] = &state.ACL{Index: index, Tag: req.Tag, Rules: append([]acl_types.ACLRule(nil), req.R...)}
	return one(&acl.ACLAddReplaceReply{ACLIndex: index})
}

// aclDel refuses to delete an ACL still applied to an interface, like VPP.
func (v *VPP) aclDel(_ *server.Session, req *acl.ACLDel) []api.Message {
	if _, ok := v.state.ACLs[req.ACLIndex]; !ok {
		return one(&acl.ACLDelReply{Retval: retval(api.NO_SUCH_ENTRY)})
	}
	for _, i := range v.state.Interfaces {
		if i.ACLs != nil && (contains(i.ACLs.Input, req.ACLIndex) || contains(i.ACLs.Output, req.ACLIndex)) {
			return one(&acl.ACLDelReply{Retval: retval(api.ACL_IN_USE_INBOUND)})
		}
	}
	delete(v.state.ACLs, req.ACLIndex)
	return one(&acl.ACLDelReply{})
}

func contains(list []uint32, x uint32) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func (v *VPP) aclDump(_ *server.Session, req *acl.ACLDump) []api.Message {
	var out []api.Message
	for _, index := range state.SortedIndexes(v.state.ACLs) {
		if req.ACLIndex != anyIndex && req.ACLIndex != index {
			continue
		}
		a := v.state.ACLs[index]
		out = append(out, &acl.ACLDetails{ACLIndex: a.Index, Tag: a.Tag, Count: uint32(len(a.Rules)), R: a.Rules})
	}
	return out
}

func (v *VPP) aclInterfaceSetACLList(_ *server.Session, req *acl.ACLInterfaceSetACLList) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&acl.ACLInterfaceSetACLListReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if int(req.NInput) > len(req.Acls) {
		return one(&acl.ACLInterfaceSetACLListReply{Retval: retval(api.INVALID_VALUE)})
	}
	for _, index := range req.Acls {
		if _, ok := v.state.ACLs[index]; !ok {
			return one(&acl.ACLInterfaceSetACLListReply{Retval: retval(api.NO_SUCH_ENTRY)})
		}
	}
	if len(req.Acls) == 0 {
		i.ACLs = nil
		return one(&acl.ACLInterfaceSetACLListReply{})
	}
	i.ACLs = &state.ACLBinding{
		Input:  append([]uint32{}, req.Acls[:req.NInput]...),
		Output: append([]uint32{}, req.Acls[req.NInput:]...),
	}
	return one(&acl.ACLInterfaceSetACLListReply{})
}

func (v *VPP) aclInterfaceListDump(_ *server.Session, req *acl.ACLInterfaceListDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex {
			continue
		}
		d := &acl.ACLInterfaceListDetails{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)}
		if i.ACLs != nil {
			d.NInput = uint8(len(i.ACLs.Input))
			d.Acls = append(append([]uint32{}, i.ACLs.Input...), i.ACLs.Output...)
			d.Count = uint8(len(d.Acls))
		}
		out = append(out, d)
	}
	return out
}
