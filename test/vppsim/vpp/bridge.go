package vpp

import (
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

type macAddr [6]byte

// macTable is a bridge domain's learned MAC -> member interface table. It lives outside
// the configuration state: learning happens on the packet path, under its own lock.
type macTable map[macAddr]uint32

// bridge forwards an Ethernet frame inside in's bridge domain: to the member that
// learned its destination, or flooded to every other member the domain's flags and
// split-horizon groups allow.
func (v *VPP) bridge(in *state.Interface, frame dataplane.Frame) []dataplane.Egress {
	bd, ok := v.state.BridgeDomains[in.Bridge.BdID]
	if !ok || frame.Layer != dataplane.L2 || len(frame.Data) < 14 {
		return nil
	}
	var dst, src macAddr
	copy(dst[:], frame.Data[0:6])
	copy(src[:], frame.Data[6:12])

	v.macMu.Lock()
	table := v.macs[bd.ID]
	if table == nil {
		table = make(macTable)
		v.macs[bd.ID] = table
	}
	if bd.Learn {
		table[src] = in.SwIfIndex
	}
	known, isKnown := table[dst]
	v.macMu.Unlock()

	unicast := dst[0]&1 == 0
	if unicast && isKnown && bd.Forward {
		member, ok := v.iface(known)
		if ok && known != in.SwIfIndex && member.Bridge != nil && member.Bridge.BdID == bd.ID {
			return v.egress(known, nil)
		}
	}
	if (unicast && !bd.UuFlood) || (!unicast && !bd.Flood) {
		return nil
	}
	var outs []dataplane.Egress
	for _, member := range v.state.SortedInterfaces() {
		if member.SwIfIndex == in.SwIfIndex || member.Bridge == nil || member.Bridge.BdID != bd.ID {
			continue
		}
		if in.Bridge.Shg != 0 && member.Bridge.Shg == in.Bridge.Shg {
			continue
		}
		outs = append(outs, v.egress(member.SwIfIndex, nil)...)
	}
	return outs
}

// forgetBridge drops what a bridge domain learned, when it is deleted.
func (v *VPP) forgetBridge(bdID uint32) {
	v.macMu.Lock()
	delete(v.macs, bdID)
	v.macMu.Unlock()
}
