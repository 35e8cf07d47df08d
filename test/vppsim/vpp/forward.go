package vpp

import (
	"net"
	"net/netip"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// Forward implements dataplane.Forwarder. Only an enabled interface receives and only an
// enabled interface transmits. A frame goes where the receiving interface's L2
// cross-connect points, or through its bridge domain, or, for IP, along its l3xc path;
// anything else is dropped, as VPP drops what its configuration does not cover.
func (v *VPP) Forward(rx uint32, frame dataplane.Frame) []dataplane.Egress {
	v.mu.RLock()
	defer v.mu.RUnlock()
	in, ok := v.iface(rx)
	if !ok || !v.enabled(in) {
		return nil
	}
	switch {
	case in.L2XconnectTx != nil:
		return v.egress(*in.L2XconnectTx, nil)
	case in.Bridge != nil:
		return v.bridge(in, frame)
	case frame.IP != nil:
		return v.l3xc(in, frame.IP)
	}
	return nil
}

// SubInterface implements dataplane.Forwarder.
func (v *VPP) SubInterface(parent uint32, vlan uint16) (uint32, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, i := range v.state.Interfaces {
		if i.Sub != nil && i.Sub.Parent == parent && i.Sub.VlanID == uint32(vlan) {
			return i.SwIfIndex, true
		}
	}
	return 0, false
}

// enabled is VPP's admin state, which a sub-interface also inherits from its parent.
func (v *VPP) enabled(i *state.Interface) bool {
	if !i.AdminUp {
		return false
	}
	if i.Sub != nil {
		parent, ok := v.iface(i.Sub.Parent)
		return ok && parent.AdminUp
	}
	return true
}

func (v *VPP) l3xc(in *state.Interface, ipHeader []byte) []dataplane.Egress {
	paths := in.L3xcIP4
	ip6 := ipHeader[0]>>4 == 6
	if ip6 {
		paths = in.L3xcIP6
	}
	if len(paths) == 0 {
		return nil
	}
	path := paths[0]
	nextHop, _ := netip.AddrFromSlice(path.Nh.Address.GetIP4().ToIP())
	if ip6 {
		nextHop, _ = netip.AddrFromSlice(path.Nh.Address.GetIP6().ToIP())
	}
	if !nextHop.IsValid() || nextHop.IsUnspecified() {
		nextHop = destination(ipHeader)
	}
	egress := v.egress(path.SwIfIndex, &nextHop)
	for i := range egress {
		egress[i].Routed = true
	}
	return egress
}

// egress checks the transmit interface, maps a sub-interface onto its parent's port and,
// for IP leaving through Ethernet, resolves the next hop's MAC from static neighbours.
func (v *VPP) egress(tx uint32, nextHop *netip.Addr) []dataplane.Egress {
	out, ok := v.iface(tx)
	if !ok || !v.enabled(out) {
		return nil
	}
	e := dataplane.Egress{SwIfIndex: tx}
	if out.Sub != nil {
		e.SwIfIndex, e.PushVlan = out.Sub.Parent, uint16(out.Sub.VlanID)
	}
	if mac, err := net.ParseMAC(out.MAC); err == nil {
		e.SrcMAC = mac
	}
	if nextHop != nil && nextHop.IsValid() {
		if n, ok := v.state.Neighbors[state.NeighborKey(tx, nextHop.String())]; ok {
			if mac, err := net.ParseMAC(n.MAC); err == nil {
				e.DstMAC = mac
			}
		}
	}
	return []dataplane.Egress{e}
}

func destination(ipHeader []byte) netip.Addr {
	switch {
	case ipHeader[0]>>4 == 4 && len(ipHeader) >= 20:
		addr, _ := netip.AddrFromSlice(ipHeader[16:20])
		return addr
	case ipHeader[0]>>4 == 6 && len(ipHeader) >= 40:
		addr, _ := netip.AddrFromSlice(ipHeader[24:40])
		return addr
	}
	return netip.Addr{}
}
