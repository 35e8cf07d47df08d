package vpp

import (
	"net"
	"strconv"

	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

func (v *VPP) registerTap() {
	on(v, v.tapCreateV3)
	on(v, v.tapDeleteV2)
	on(v, v.swInterfaceTapV2Dump)
}

// tapCreateV3 creates the kernel interface first and only then the VPP interface, so a
// failure leaves nothing behind.
func (v *VPP) tapCreateV3(_ *server.Session, req *tapv2.TapCreateV3) []api.Message {
	id := req.ID
	if id == anyIndex {
		id = v.freeTapID()
	} else if v.tapIDTaken(id) {
		return one(&tapv2.TapCreateV3Reply{Retval: retval(api.INVALID_VALUE)})
	}
	tun := req.TapFlags&tapv2.TAP_API_FLAG_TUN != 0
	kind, prefix := state.KindTap, "tap"
	if tun {
		kind, prefix = state.KindTun, "tun"
	}
	spec := dataplane.TapSpec{
		// VPP names the host side tap<id> even for a tun.
		HostIfName: "tap" + strconv.FormatUint(uint64(id), 10),
		Tun:        tun,
	}
	if req.HostIfNameSet && req.HostIfName != "" {
		spec.HostIfName = req.HostIfName
	}
	if req.HostNamespaceSet {
		spec.Namespace = req.HostNamespace
	}
	if req.HostMacAddrSet {
		spec.HostMAC = req.HostMacAddr.ToMAC()
	}
	if req.HostMtuSet {
		spec.HostMTU = int(req.HostMtuSize)
	}
	if req.HostIP4PrefixSet {
		spec.HostIP4 = &net.IPNet{IP: req.HostIP4Prefix.Address.ToIP(), Mask: net.CIDRMask(int(req.HostIP4Prefix.Len), 32)}
	}
	if req.HostIP6PrefixSet {
		spec.HostIP6 = &net.IPNet{IP: req.HostIP6Prefix.Address.ToIP(), Mask: net.CIDRMask(int(req.HostIP6Prefix.Len), 128)}
	}
	// The new interface's index is known before it exists.
	swIfIndex := v.state.PeekSwIfIndex()
	host, err := v.plane.CreateTap(swIfIndex, spec)
	if err != nil {
		v.log.Warn("tap_create_v3 failed", "host_if_name", spec.HostIfName, "namespace", spec.Namespace, "error", err)
		return one(&tapv2.TapCreateV3Reply{Retval: retval(api.SYSCALL_ERROR_1)})
	}
	mac := req.MacAddress.ToMAC()
	if req.UseRandomMac || req.MacAddress == (ethernet_types.MacAddress{}) {
		mac = randomMAC()
	}
	if tun {
		mac = nil
	}
	i := v.addInterface(kind, prefix+strconv.FormatUint(uint64(id), 10), "virtio", mac)
	i.MTU = [4]uint32{uint32(host.HostMTU), 0, 0, 0}
	i.LinkMTU = uint16(host.HostMTU)
	i.Tap = &state.Tap{
		ID:            id,
		HostIfName:    spec.HostIfName,
		HostNamespace: spec.Namespace,
		HostMAC:       macString(host.HostMAC),
		HostMTU:       uint32(host.HostMTU),
		Flags:         uint32(req.TapFlags),
		Tun:           tun,
	}
	if req.Tag != "" {
		i.Tag = req.Tag
	}
	return one(&tapv2.TapCreateV3Reply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func macString(mac net.HardwareAddr) string {
	if len(mac) == 0 {
		return ""
	}
	return mac.String()
}

func (v *VPP) tapIDTaken(id uint32) bool {
	for _, i := range v.state.Interfaces {
		if i.Tap != nil && i.Tap.ID == id {
			return true
		}
	}
	return false
}

func (v *VPP) freeTapID() uint32 {
	var id uint32
	for v.tapIDTaken(id) {
		id++
	}
	return id
}

func (v *VPP) tapDeleteV2(_ *server.Session, req *tapv2.TapDeleteV2) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Tap == nil {
		return one(&tapv2.TapDeleteV2Reply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	v.deleteInterface(i)
	return one(&tapv2.TapDeleteV2Reply{})
}

func (v *VPP) swInterfaceTapV2Dump(_ *server.Session, req *tapv2.SwInterfaceTapV2Dump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.Tap == nil || (uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex) {
			continue
		}
		d := &tapv2.SwInterfaceTapV2Details{
			SwIfIndex:     i.SwIfIndex,
			ID:            i.Tap.ID,
			TxRingSz:      256,
			RxRingSz:      256,
			HostMtuSize:   i.Tap.HostMTU,
			TapFlags:      tapv2.TapFlags(i.Tap.Flags),
			DevName:       i.Name,
			HostIfName:    i.Tap.HostIfName,
			HostNamespace: i.Tap.HostNamespace,
		}
		if mac, err := parseMAC(i.Tap.HostMAC); err == nil {
			d.HostMacAddr = mac
		}
		out = append(out, d)
	}
	return out
}
