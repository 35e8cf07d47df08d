package vpp

import (
	"slices"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

func (v *VPP) registerL2() {
	on(v, v.swInterfaceSetL2Xconnect)
	on(v, v.l2XconnectDump)
	on(v, v.swInterfaceSetL2Bridge)
	on(v, v.bridgeDomainAddDelV2)
	on(v, v.bridgeDomainDump)
	on(v, v.l2InterfaceVlanTagRewrite)
}

// swInterfaceSetL2Xconnect configures one direction only: rx -> tx. Disabling returns the
// rx interface to L3 mode whatever it was cross-connected to.
func (v *VPP) swInterfaceSetL2Xconnect(_ *server.Session, req *l2.SwInterfaceSetL2Xconnect) []api.Message {
	rx, ok := v.iface(uint32(req.RxSwIfIndex))
	if !ok {
		return one(&l2.SwInterfaceSetL2XconnectReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if !req.Enable {
		rx.L2XconnectTx = nil
		return one(&l2.SwInterfaceSetL2XconnectReply{})
	}
	if _, ok := v.iface(uint32(req.TxSwIfIndex)); !ok {
		return one(&l2.SwInterfaceSetL2XconnectReply{Retval: retval(api.INVALID_SW_IF_INDEX_2)})
	}
	tx := uint32(req.TxSwIfIndex)
	rx.L2XconnectTx = &tx
	rx.Bridge = nil
	return one(&l2.SwInterfaceSetL2XconnectReply{})
}

func (v *VPP) l2XconnectDump(_ *server.Session, _ *l2.L2XconnectDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.L2XconnectTx != nil {
			out = append(out, &l2.L2XconnectDetails{
				RxSwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex),
				TxSwIfIndex: interface_types.InterfaceIndex(*i.L2XconnectTx),
			})
		}
	}
	return out
}

func (v *VPP) swInterfaceSetL2Bridge(_ *server.Session, req *l2.SwInterfaceSetL2Bridge) []api.Message {
	i, ok := v.iface(uint32(req.RxSwIfIndex))
	if !ok {
		return one(&l2.SwInterfaceSetL2BridgeReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if !req.Enable {
		i.Bridge = nil
		return one(&l2.SwInterfaceSetL2BridgeReply{})
	}
	if _, ok := v.state.BridgeDomains[req.BdID]; !ok {
		return one(&l2.SwInterfaceSetL2BridgeReply{Retval: retval(api.NO_SUCH_ENTRY)})
	}
	i.Bridge = &state.BridgePort{BdID: req.BdID, PortType: uint32(req.PortType), Shg: req.Shg}
	i.L2XconnectTx = nil
	return one(&l2.SwInterfaceSetL2BridgeReply{})
}

func (v *VPP) bridgeDomainAddDelV2(_ *server.Session, req *l2.BridgeDomainAddDelV2) []api.Message {
	if !req.IsAdd {
		if _, ok := v.state.BridgeDomains[req.BdID]; !ok {
			return one(&l2.BridgeDomainAddDelV2Reply{Retval: retval(api.NO_SUCH_ENTRY)})
		}
		for _, i := range v.state.Interfaces {
			if i.Bridge != nil && i.Bridge.BdID == req.BdID {
				i.Bridge = nil
			}
		}
		delete(v.state.BridgeDomains, req.BdID)
		v.forgetBridge(req.BdID)
		return one(&l2.BridgeDomainAddDelV2Reply{BdID: req.BdID})
	}
	id := req.BdID
	if id == anyIndex {
		for id = 1; v.state.BridgeDomains[id] != nil; id++ {
		}
	} else if _, exists := v.state.BridgeDomains[id]; exists {
		return one(&l2.BridgeDomainAddDelV2Reply{Retval: retval(api.BD_ALREADY_EXISTS)})
	}
	v.state.BridgeDomains[id] = &state.BridgeDomain{
		ID: id, Flood: req.Flood, UuFlood: req.UuFlood, Forward: req.Forward, Learn: req.Learn,
		ArpTerm: req.ArpTerm, MacAge: req.MacAge, Tag: req.BdTag,
	}
	return one(&l2.BridgeDomainAddDelV2Reply{BdID: id})
}

// bridgeDomainDump lists bridge domains with their members, as VPP does: every domain (bd_id
// ~0, never the default domain 0), one by its ID, or the one an interface is a member of
// (sw_if_index; nothing when it is in none).
func (v *VPP) bridgeDomainDump(_ *server.Session, req *l2.BridgeDomainDump) []api.Message {
	if req.BdID == 0 {
		return nil
	}
	wanted := func(bd *state.BridgeDomain) bool { return req.BdID == anyIndex || req.BdID == bd.ID }
	if uint32(req.SwIfIndex) != anyIndex {
		i, ok := v.iface(uint32(req.SwIfIndex))
		if !ok || i.Bridge == nil {
			return nil
		}
		wanted = func(bd *state.BridgeDomain) bool {
			return bd.ID == i.Bridge.BdID && (req.BdID == anyIndex || req.BdID == bd.ID)
		}
	}
	var ids []uint32
	for id, bd := range v.state.BridgeDomains {
		if wanted(bd) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []api.Message
	for _, id := range ids {
		bd := v.state.BridgeDomains[id]
		details := &l2.BridgeDomainDetails{
			BdID: bd.ID, Flood: bd.Flood, UuFlood: bd.UuFlood, Forward: bd.Forward, Learn: bd.Learn,
			ArpTerm: bd.ArpTerm, MacAge: bd.MacAge, BdTag: bd.Tag,
			BviSwIfIndex: interface_types.InterfaceIndex(anyIndex), UuFwdSwIfIndex: interface_types.InterfaceIndex(anyIndex),
		}
		for _, member := range v.state.SortedInterfaces() {
			if member.Bridge != nil && member.Bridge.BdID == bd.ID {
				details.SwIfDetails = append(details.SwIfDetails, l2.BridgeDomainSwIf{
					SwIfIndex: interface_types.InterfaceIndex(member.SwIfIndex), Shg: member.Bridge.Shg,
				})
			}
		}
		details.NSwIfs = uint32(len(details.SwIfDetails))
		out = append(out, details)
	}
	return out
}

func (v *VPP) l2InterfaceVlanTagRewrite(_ *server.Session, req *l2.L2InterfaceVlanTagRewrite) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&l2.L2InterfaceVlanTagRewriteReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if req.VtrOp == 0 {
		i.VlanTagRewrite = nil
	} else {
		i.VlanTagRewrite = &state.VlanTagRewrite{Op: req.VtrOp, PushDot1q: req.PushDot1q, Tag1: req.Tag1, Tag2: req.Tag2}
	}
	return one(&l2.L2InterfaceVlanTagRewriteReply{})
}
