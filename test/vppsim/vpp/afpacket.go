package vpp

import (
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

func (v *VPP) registerAfPacket() {
	on(v, v.afPacketCreate)
	on(v, v.afPacketCreateV2)
	on(v, v.afPacketCreateV3)
	on(v, v.afPacketSetL4CksumOffload)
	on(v, v.afPacketDelete)
	on(v, v.afPacketDump)
}

func afPacketName(host string) string { return "host-" + host }

func (v *VPP) afPacketCreateV3(_ *server.Session, req *af_packet.AfPacketCreateV3) []api.Message {
	idx, code := v.createAfPacket(req.HostIfName, req.HwAddr, req.UseRandomHwAddr)
	return one(&af_packet.AfPacketCreateV3Reply{Retval: retval(code), SwIfIndex: idx})
}

func (v *VPP) afPacketCreateV2(_ *server.Session, req *af_packet.AfPacketCreateV2) []api.Message {
	idx, code := v.createAfPacket(req.HostIfName, req.HwAddr, req.UseRandomHwAddr)
	return one(&af_packet.AfPacketCreateV2Reply{Retval: retval(code), SwIfIndex: idx})
}

func (v *VPP) afPacketCreate(_ *server.Session, req *af_packet.AfPacketCreate) []api.Message {
	idx, code := v.createAfPacket(req.HostIfName, req.HwAddr, req.UseRandomHwAddr)
	return one(&af_packet.AfPacketCreateReply{Retval: retval(code), SwIfIndex: idx})
}

// createAfPacket is shared by the three af_packet_create versions: the socket is bound
// first, so a missing host interface leaves no VPP interface behind. The MAC is random
// when asked, else the requested one, else the host interface's.
func (v *VPP) createAfPacket(host string, hwAddr ethernet_types.MacAddress, random bool) (interface_types.InterfaceIndex, api.VPPApiError) {
	if host == "" {
		return 0, api.INVALID_ARGUMENT
	}
	if _, exists := v.state.InterfaceByName(afPacketName(host)); exists {
		return 0, api.IF_ALREADY_EXISTS
	}
	swIfIndex := v.state.PeekSwIfIndex()
	hostLink, err := v.plane.CreateAfPacket(swIfIndex, host)
	if err != nil {
		v.log.Warn("af_packet_create failed", "host_if_name", host, "error", err)
		return 0, api.INVALID_INTERFACE
	}
	mac := hostLink.MAC
	switch {
	case random:
		mac = randomMAC()
	case hwAddr != (ethernet_types.MacAddress{}):
		mac = hwAddr.ToMAC()
	}
	// VPP's MTU for it is its default (9000), whatever the host interface's; its link is up
	// from the start (VPP announces it), admin state down.
	i := v.addInterface(state.KindAfPacket, afPacketName(host), "af-packet", mac)
	i.AfPacket = &state.AfPacket{HostIfName: host}
	i.LinkUp = true
	v.emitInterfaceEvent(i, false)
	return interface_types.InterfaceIndex(i.SwIfIndex), 0
}

// afPacketSetL4CksumOffload is accepted and recorded: the simulator never offloads.
func (v *VPP) afPacketSetL4CksumOffload(_ *server.Session, req *af_packet.AfPacketSetL4CksumOffload) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.AfPacket == nil {
		return one(&af_packet.AfPacketSetL4CksumOffloadReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	i.AfPacket.L4CksumOffload = req.Set
	return one(&af_packet.AfPacketSetL4CksumOffloadReply{})
}

// afPacketDelete answers an unknown host interface with SYSCALL_ERROR_1, VPP's code for it.
func (v *VPP) afPacketDelete(_ *server.Session, req *af_packet.AfPacketDelete) []api.Message {
	i, ok := v.state.InterfaceByName(afPacketName(req.HostIfName))
	if !ok || i.AfPacket == nil {
		return one(&af_packet.AfPacketDeleteReply{Retval: retval(api.SYSCALL_ERROR_1)})
	}
	v.deleteInterface(i)
	return one(&af_packet.AfPacketDeleteReply{})
}

func (v *VPP) afPacketDump(_ *server.Session, _ *af_packet.AfPacketDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.AfPacket != nil {
			out = append(out, &af_packet.AfPacketDetails{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex), HostIfName: i.AfPacket.HostIfName})
		}
	}
	return out
}
