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
	on(v, v.afPacketCreateV3)
	on(v, v.afPacketDelete)
	on(v, v.afPacketDump)
}

func afPacketName(host string) string { return "host-" + host }

func (v *VPP) afPacketCreateV3(_ *server.Session, req *af_packet.AfPacketCreateV3) []api.Message {
	if req.HostIfName == "" {
		return one(&af_packet.AfPacketCreateV3Reply{Retval: retval(api.INVALID_ARGUMENT)})
	}
	if _, exists := v.state.InterfaceByName(afPacketName(req.HostIfName)); exists {
		return one(&af_packet.AfPacketCreateV3Reply{Retval: retval(api.SUBIF_ALREADY_EXISTS)})
	}
	swIfIndex := v.state.NextSwIfIndex
	hostMAC, err := v.plane.CreateAfPacket(swIfIndex, req.HostIfName)
	if err != nil {
		v.log.Warn("af_packet_create_v3 failed", "host_if_name", req.HostIfName, "error", err)
		return one(&af_packet.AfPacketCreateV3Reply{Retval: retval(api.INVALID_INTERFACE)})
	}
	mac := hostMAC
	switch {
	case req.UseRandomHwAddr:
		mac = randomMAC()
	case req.HwAddr != (ethernet_types.MacAddress{}):
		mac = req.HwAddr.ToMAC()
	}
	i := v.addInterface(state.KindAfPacket, afPacketName(req.HostIfName), "af_packet", mac)
	i.AfPacket = &state.AfPacket{HostIfName: req.HostIfName}
	return one(&af_packet.AfPacketCreateV3Reply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
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
