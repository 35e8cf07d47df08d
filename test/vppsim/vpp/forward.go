package vpp

import (
	"net"
	"net/netip"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// Forward implements dataplane.Forwarder. Only an enabled interface receives, only an
// enabled interface transmits, and a packet goes where the receiving interface's L2
// cross-connect or, for IP, its l3xc points; anything else is dropped, as VPP drops what
// its configuration does not cover.
func (v *VPP) Forward(rx uint32, ipHeader []byte) (dataplane.Egress, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	in, ok := v.iface(rx)
	if !ok || !in.AdminUp {
		return dataplane.Egress{}, false
	}
	if in.L2XconnectTx != nil {
		return v.egress(*in.L2XconnectTx, nil)
	}
	if ipHeader == nil {
		return dataplane.Egress{}, false
	}
	paths := in.L3xcIP4
	if ipHeader[0]>>4 == 6 {
		paths = in.L3xcIP6
	}
	if len(paths) == 0 {
		return dataplane.Egress{}, false
	}
	path := paths[0]
	nextHop, _ := netip.AddrFromSlice(path.Nh.Address.GetIP4().ToIP())
	if ipHeader[0]>>4 == 6 {
		nextHop, _ = netip.AddrFromSlice(path.Nh.Address.GetIP6().ToIP())
	}
	if !nextHop.IsValid() || nextHop.IsUnspecified() {
		nextHop = destination(ipHeader)
	}
	return v.egress(path.SwIfIndex, &nextHop)
}

// egress checks the transmit interface and, for IP leaving through Ethernet, resolves the
// next hop's MAC from the static neighbours.
func (v *VPP) egress(tx uint32, nextHop *netip.Addr) (dataplane.Egress, bool) {
	out, ok := v.iface(tx)
	if !ok || !out.AdminUp {
		return dataplane.Egress{}, false
	}
	e := dataplane.Egress{SwIfIndex: tx}
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
	return e, true
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
