package vpp

import (
	"net/netip"
	"strconv"

	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/vxlan"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

func (v *VPP) registerVxlan() {
	on(v, v.vxlanAddDelTunnelV3)
	on(v, v.vxlanTunnelV2Dump)
}

func toAddr(a ip_types.Address) (netip.Addr, bool) {
	addr, ok := netip.AddrFromSlice(a.ToIP())
	return addr.Unmap(), ok
}

func (v *VPP) findVxlan(src, dst string, vni uint32) (*state.Interface, bool) {
	for _, i := range v.state.Interfaces {
		if x := i.Vxlan; x != nil && x.Src == src && x.Dst == dst && x.Vni == vni {
			return i, true
		}
	}
	return nil, false
}

// vxlanAddDelTunnelV3 identifies tunnels by (src, dst, vni) as VPP does: adding one that
// exists gets TUNNEL_EXIST, deleting one that does not gets NO_SUCH_ENTRY. A new tunnel is
// up (admin and link) at once, and VPP announces it.
func (v *VPP) vxlanAddDelTunnelV3(_ *server.Session, req *vxlan.VxlanAddDelTunnelV3) []api.Message {
	src, okSrc := toAddr(req.SrcAddress)
	dst, okDst := toAddr(req.DstAddress)
	if !okSrc || !okDst || src.Is4() != dst.Is4() || src == dst {
		return one(&vxlan.VxlanAddDelTunnelV3Reply{Retval: retval(api.INVALID_VALUE)})
	}
	existing, exists := v.findVxlan(src.String(), dst.String(), req.Vni)
	if !req.IsAdd {
		if !exists {
			return one(&vxlan.VxlanAddDelTunnelV3Reply{Retval: retval(api.NO_SUCH_ENTRY)})
		}
		v.deleteInterface(existing)
		return one(&vxlan.VxlanAddDelTunnelV3Reply{SwIfIndex: interface_types.InterfaceIndex(existing.SwIfIndex)})
	}
	if exists {
		return one(&vxlan.VxlanAddDelTunnelV3Reply{Retval: retval(api.TUNNEL_EXIST)})
	}
	instance := req.Instance
	if instance == anyIndex {
		instance = v.freeVxlanInstance()
	} else if v.vxlanInstanceTaken(instance) {
		return one(&vxlan.VxlanAddDelTunnelV3Reply{Retval: retval(api.INSTANCE_IN_USE)})
	}
	swIfIndex := v.state.PeekSwIfIndex()
	spec := dataplane.VxlanSpec{Src: src, Dst: dst, SrcPort: req.SrcPort, DstPort: req.DstPort, Vni: req.Vni}
	if err := v.plane.CreateVxlan(swIfIndex, spec); err != nil {
		v.log.Warn("vxlan_add_del_tunnel_v3 failed", "src", src, "dst", dst, "error", err)
		return one(&vxlan.VxlanAddDelTunnelV3Reply{Retval: retval(api.SYSCALL_ERROR_1)})
	}
	i := v.addInterface(state.KindVxlan, "vxlan_tunnel"+strconv.FormatUint(uint64(instance), 10), "VXLAN", randomMAC())
	i.Vxlan = &state.Vxlan{
		Instance:       instance,
		Src:            src.String(),
		Dst:            dst.String(),
		SrcPort:        portOrDefault(req.SrcPort),
		DstPort:        portOrDefault(req.DstPort),
		Vni:            req.Vni,
		EncapVrfID:     req.EncapVrfID,
		DecapNextIndex: req.DecapNextIndex,
		McastSwIfIndex: uint32(req.McastSwIfIndex),
		IsL3:           req.IsL3,
	}
	i.AdminUp, i.LinkUp = true, true
	v.emitInterfaceEvent(i, false)
	return one(&vxlan.VxlanAddDelTunnelV3Reply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func portOrDefault(p uint16) uint16 {
	if p == 0 {
		return dataplane.DefaultVxlanPort
	}
	return p
}

func (v *VPP) vxlanInstanceTaken(instance uint32) bool {
	for _, i := range v.state.Interfaces {
		if i.Vxlan != nil && i.Vxlan.Instance == instance {
			return true
		}
	}
	return false
}

func (v *VPP) freeVxlanInstance() uint32 {
	var n uint32
	for v.vxlanInstanceTaken(n) {
		n++
	}
	return n
}

func (v *VPP) vxlanTunnelV2Dump(_ *server.Session, req *vxlan.VxlanTunnelV2Dump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		x := i.Vxlan
		if x == nil || (uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex) {
			continue
		}
		src, _ := ip_types.ParseAddress(x.Src)
		dst, _ := ip_types.ParseAddress(x.Dst)
		out = append(out, &vxlan.VxlanTunnelV2Details{
			SwIfIndex:      interface_types.InterfaceIndex(i.SwIfIndex),
			Instance:       x.Instance,
			SrcAddress:     src,
			DstAddress:     dst,
			SrcPort:        x.SrcPort,
			DstPort:        x.DstPort,
			McastSwIfIndex: interface_types.InterfaceIndex(x.McastSwIfIndex),
			EncapVrfID:     x.EncapVrfID,
			DecapNextIndex: x.DecapNextIndex,
			Vni:            x.Vni,
		})
	}
	return out
}
