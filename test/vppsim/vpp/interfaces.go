package vpp

import (
	"crypto/rand"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

const (
	defaultMTU = 9000
	anyIndex   = ^uint32(0)
)

func (v *VPP) registerInterfaces() {
	on(v, v.swInterfaceDump)
	on(v, v.swInterfaceSetFlags)
	on(v, v.swInterfaceSetMtu)
	on(v, v.swInterfaceSetRxMode)
	on(v, v.swInterfaceTagAddDel)
	on(v, v.swInterfaceSetTable)
	on(v, v.swInterfaceGetTable)
	on(v, v.swInterfaceSetUnnumbered)
	on(v, v.swInterfaceAddDelAddress)
	on(v, v.swInterfaceSetMacAddress)
	on(v, v.wantInterfaceEvents)
	on(v, v.createLoopback)
	on(v, v.createLoopbackInstance)
	on(v, v.hwInterfaceSetMtu)
	on(v, v.swInterfaceGetMacAddress)
	on(v, v.deleteLoopback)
	on(v, v.createVlanSubif)
	on(v, v.deleteSubif)
	on(v, v.swInterfaceSetPromisc)
}

// swInterfaceSetPromisc refuses, as VPP v24.10 does for every kind of interface the simulator
// has (af_packet and loopback devices have no promiscuous switch in VPP).
func (v *VPP) swInterfaceSetPromisc(_ *server.Session, req *interfaces.SwInterfaceSetPromisc) []api.Message {
	if _, ok := v.iface(uint32(req.SwIfIndex)); !ok {
		return one(&interfaces.SwInterfaceSetPromiscReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	return one(&interfaces.SwInterfaceSetPromiscReply{Retval: retval(api.UNSPECIFIED)})
}

func retval(code api.VPPApiError) int32 { return int32(code) }

// addInterface allocates a sw_if_index the way VPP does (reusing the last freed one). Like VPP it announces no
// event for a new interface: events come with admin/link changes and deletion.
func (v *VPP) addInterface(kind state.Kind, name, devType string, mac net.HardwareAddr) *state.Interface {
	i := &state.Interface{
		SwIfIndex: v.state.AllocateSwIfIndex(),
		Name:      name,
		Kind:      kind,
		DevType:   devType,
		MAC:       mac.String(),
		MTU:       [4]uint32{defaultMTU, 0, 0, 0},
		LinkMTU:   defaultMTU,
		RxMode:    uint32(interface_types.RX_MODE_API_DEFAULT),
	}
	v.state.Interfaces[i.SwIfIndex] = i
	v.dirty = true
	return i
}

// deleteInterface removes an interface with everything hanging off it, including its
// sub-interfaces and its kernel side.
func (v *VPP) deleteInterface(i *state.Interface) {
	for _, child := range v.state.SortedInterfaces() {
		if child.Sub != nil && child.Sub.Parent == i.SwIfIndex {
			v.deleteInterface(child)
		}
	}
	v.plane.RemovePort(i.SwIfIndex)
	delete(v.state.Interfaces, i.SwIfIndex)
	v.state.FreeSwIfIndex(i.SwIfIndex)
	v.dirty = true
	for _, other := range v.state.Interfaces {
		if other.L2XconnectTx != nil && *other.L2XconnectTx == i.SwIfIndex {
			other.L2XconnectTx = nil
		}
		if other.UnnumberedOf != nil && *other.UnnumberedOf == i.SwIfIndex {
			other.UnnumberedOf = nil
		}
		// The index will be reused; nothing may keep pointing at it.
		unresolvePaths(other.L3xcIP4, i.SwIfIndex)
		unresolvePaths(other.L3xcIP6, i.SwIfIndex)
	}
	for _, r := range v.state.Routes {
		unresolvePaths(r.Paths, i.SwIfIndex)
	}
	// VPP keeps the static neighbours of a deleted interface (TestDeletedInterfaceKeepsItsStaticNeighbours).
	v.emitInterfaceEvent(i, true)
}

// unresolvePaths points the paths through a deleted interface at no interface: like VPP,
// the policy stays (and can still be deleted) but forwards nothing.
func unresolvePaths(paths []fib_types.FibPath, swIfIndex uint32) {
	for n := range paths {
		if paths[n].SwIfIndex == swIfIndex {
			paths[n].SwIfIndex = anyIndex
		}
	}
}

func randomMAC() net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	_, _ = rand.Read(mac[2:])
	mac[0], mac[1] = 0x02, 0xfe
	return mac
}

func statusFlags(i *state.Interface) interface_types.IfStatusFlags {
	var f interface_types.IfStatusFlags
	if i.AdminUp {
		f |= interface_types.IF_STATUS_API_FLAG_ADMIN_UP
	}
	if i.LinkUp {
		f |= interface_types.IF_STATUS_API_FLAG_LINK_UP
	}
	return f
}

func (v *VPP) emitInterfaceEvent(i *state.Interface, deleted bool) {
	for s, pid := range v.subscribers {
		ev := &interfaces.SwInterfaceEvent{
			PID:       pid,
			SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex),
			Flags:     statusFlags(i),
			Deleted:   deleted,
		}
		if err := s.Send(ev, 0); err != nil {
			v.log.Warn("sending sw_interface_event", "client", s.Index, "error", err)
		}
	}
}

func parseMAC(text string) (ethernet_types.MacAddress, error) {
	mac, err := net.ParseMAC(text)
	if err != nil {
		return ethernet_types.MacAddress{}, err
	}
	return ethernet_types.NewMacAddress(mac), nil
}

func macOf(i *state.Interface) ethernet_types.MacAddress {
	mac, _ := parseMAC(i.MAC)
	return mac
}

func interfaceDetails(i *state.Interface) *interfaces.SwInterfaceDetails {
	d := &interfaces.SwInterfaceDetails{
		SwIfIndex:        interface_types.InterfaceIndex(i.SwIfIndex),
		SupSwIfIndex:     i.SwIfIndex,
		L2Address:        macOf(i),
		Flags:            statusFlags(i),
		Type:             interface_types.IF_API_TYPE_HARDWARE,
		LinkMtu:          i.LinkMTU,
		Mtu:              append([]uint32(nil), i.MTU[:]...),
		InterfaceName:    i.Name,
		InterfaceDevType: i.DevType,
		Tag:              i.Tag,
	}
	if i.Sub != nil {
		d.Type = interface_types.IF_API_TYPE_SUB
		d.SupSwIfIndex = i.Sub.Parent
		d.SubID = i.Sub.SubID
		d.SubNumberOfTags = 1
		d.SubOuterVlanID = uint16(i.Sub.VlanID)
		d.SubIfFlags = interface_types.SUB_IF_API_FLAG_ONE_TAG | interface_types.SUB_IF_API_FLAG_EXACT_MATCH
	}
	if i.VlanTagRewrite != nil {
		d.VtrOp = i.VlanTagRewrite.Op
		d.VtrPushDot1q = i.VlanTagRewrite.PushDot1q
		d.VtrTag1 = i.VlanTagRewrite.Tag1
		d.VtrTag2 = i.VlanTagRewrite.Tag2
	}
	return d
}

// swInterfaceDump follows VPP: a specific index (other than 0 and ~0) without a name
// filter dumps that interface alone, anything else walks all of them through the
// case-insensitive name filter.
func (v *VPP) swInterfaceDump(_ *server.Session, req *interfaces.SwInterfaceDump) []api.Message {
	idx := uint32(req.SwIfIndex)
	if !req.NameFilterValid && idx != anyIndex && idx != 0 {
		i, ok := v.iface(idx)
		if !ok {
			return nil
		}
		return one(interfaceDetails(i))
	}
	var out []api.Message
	filter := strings.ToLower(req.NameFilter)
	for _, i := range v.state.SortedInterfaces() {
		if req.NameFilterValid && !strings.Contains(strings.ToLower(i.Name), filter) {
			continue
		}
		out = append(out, interfaceDetails(i))
	}
	return out
}

func (v *VPP) swInterfaceSetFlags(_ *server.Session, req *interfaces.SwInterfaceSetFlags) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetFlagsReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	up := req.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0
	if i.AdminUp != up {
		i.AdminUp = up
		switch {
		case i.Memif != nil:
			// A memif's link comes up when a peer connects, which never happens here.
		case i.AfPacket != nil:
			// VPP's af_packet device takes the host interface up and down with it.
			i.LinkUp = up
			if err := v.plane.SetHostLinkUp(i.AfPacket.HostIfName, up); err != nil {
				v.log.Warn("setting the host interface's admin state", "host_if_name", i.AfPacket.HostIfName, "error", err)
			}
		default:
			// Every other simulated link has carrier as soon as it is enabled.
			i.LinkUp = up
		}
		v.emitInterfaceEvent(i, false)
	}
	return one(&interfaces.SwInterfaceSetFlagsReply{})
}

func (v *VPP) swInterfaceSetMtu(_ *server.Session, req *interfaces.SwInterfaceSetMtu) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetMtuReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	for n := 0; n < len(req.Mtu) && n < len(i.MTU); n++ {
		// VPP leaves a protocol's MTU untouched when the request carries 0 for it.
		if req.Mtu[n] != 0 {
			i.MTU[n] = req.Mtu[n]
		}
	}
	return one(&interfaces.SwInterfaceSetMtuReply{})
}

func (v *VPP) swInterfaceSetRxMode(_ *server.Session, req *interfaces.SwInterfaceSetRxMode) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetRxModeReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	i.RxMode = uint32(req.Mode)
	return one(&interfaces.SwInterfaceSetRxModeReply{})
}

func (v *VPP) swInterfaceTagAddDel(_ *server.Session, req *interfaces.SwInterfaceTagAddDel) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceTagAddDelReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if req.IsAdd {
		if req.Tag == "" {
			return one(&interfaces.SwInterfaceTagAddDelReply{Retval: retval(api.INVALID_VALUE)})
		}
		i.Tag = req.Tag
	} else {
		i.Tag = ""
	}
	return one(&interfaces.SwInterfaceTagAddDelReply{})
}

func (v *VPP) swInterfaceSetTable(_ *server.Session, req *interfaces.SwInterfaceSetTable) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetTableReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if _, ok := v.state.Tables[state.TableKey(req.VrfID, req.IsIPv6)]; !ok {
		return one(&interfaces.SwInterfaceSetTableReply{Retval: retval(api.NO_SUCH_FIB)})
	}
	if req.IsIPv6 {
		i.IP6Table = req.VrfID
	} else {
		i.IP4Table = req.VrfID
	}
	return one(&interfaces.SwInterfaceSetTableReply{})
}

func (v *VPP) swInterfaceGetTable(_ *server.Session, req *interfaces.SwInterfaceGetTable) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceGetTableReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	table := i.IP4Table
	if req.IsIPv6 {
		table = i.IP6Table
	}
	return one(&interfaces.SwInterfaceGetTableReply{VrfID: table})
}

func (v *VPP) swInterfaceSetUnnumbered(_ *server.Session, req *interfaces.SwInterfaceSetUnnumbered) []api.Message {
	i, ok := v.iface(uint32(req.UnnumberedSwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetUnnumberedReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if _, ok := v.iface(uint32(req.SwIfIndex)); !ok {
		return one(&interfaces.SwInterfaceSetUnnumberedReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if req.IsAdd {
		of := uint32(req.SwIfIndex)
		i.UnnumberedOf = &of
	} else {
		i.UnnumberedOf = nil
	}
	return one(&interfaces.SwInterfaceSetUnnumberedReply{})
}

func (v *VPP) swInterfaceAddDelAddress(_ *server.Session, req *interfaces.SwInterfaceAddDelAddress) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceAddDelAddressReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if req.DelAll {
		i.Addresses = nil
		return one(&interfaces.SwInterfaceAddDelAddressReply{})
	}
	prefix := req.Prefix.String()
	at := -1
	for n, a := range i.Addresses {
		if a == prefix {
			at = n
		}
	}
	switch {
	case req.IsAdd && at < 0:
		i.Addresses = append(i.Addresses, prefix)
		sort.Strings(i.Addresses)
	case !req.IsAdd && at < 0:
		return one(&interfaces.SwInterfaceAddDelAddressReply{Retval: retval(api.ADDRESS_NOT_FOUND_FOR_INTERFACE)})
	case !req.IsAdd:
		i.Addresses = append(i.Addresses[:at], i.Addresses[at+1:]...)
	}
	return one(&interfaces.SwInterfaceAddDelAddressReply{})
}

func (v *VPP) swInterfaceSetMacAddress(_ *server.Session, req *interfaces.SwInterfaceSetMacAddress) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceSetMacAddressReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	i.MAC = req.MacAddress.String()
	return one(&interfaces.SwInterfaceSetMacAddressReply{})
}

// wantInterfaceEvents refuses a second enable and a disable without enable with
// INVALID_REGISTRATION, as VPP does.
func (v *VPP) wantInterfaceEvents(s *server.Session, req *interfaces.WantInterfaceEvents) []api.Message {
	_, registered := v.subscribers[s]
	enable := req.EnableDisable != 0
	if enable == registered {
		return one(&interfaces.WantInterfaceEventsReply{Retval: retval(api.INVALID_REGISTRATION)})
	}
	if enable {
		v.subscribers[s] = req.PID
	} else {
		delete(v.subscribers, s)
	}
	return one(&interfaces.WantInterfaceEventsReply{})
}

func (v *VPP) createLoopback(_ *server.Session, req *interfaces.CreateLoopback) []api.Message {
	var instance uint32
	for v.loopbackTaken(instance) {
		instance++
	}
	i := v.addLoopback(instance, req.MacAddress)
	return one(&interfaces.CreateLoopbackReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func (v *VPP) createLoopbackInstance(_ *server.Session, req *interfaces.CreateLoopbackInstance) []api.Message {
	instance := req.UserInstance
	if !req.IsSpecified {
		instance = 0
		for v.loopbackTaken(instance) {
			instance++
		}
	} else if v.loopbackTaken(instance) {
		return one(&interfaces.CreateLoopbackInstanceReply{Retval: retval(api.INSTANCE_IN_USE)})
	}
	i := v.addLoopback(instance, req.MacAddress)
	return one(&interfaces.CreateLoopbackInstanceReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func loopbackName(instance uint32) string { return "loop" + strconv.FormatUint(uint64(instance), 10) }

func (v *VPP) loopbackTaken(instance uint32) bool {
	_, taken := v.state.InterfaceByName(loopbackName(instance))
	return taken
}

// addLoopback gives a loopback the requested MAC, else VPP's: de:ad:00:00 then the instance.
func (v *VPP) addLoopback(instance uint32, requested ethernet_types.MacAddress) *state.Interface {
	mac := requested.ToMAC()
	if requested == (ethernet_types.MacAddress{}) {
		mac = net.HardwareAddr{0xde, 0xad, 0, 0, byte(instance >> 8), byte(instance)}
	}
	return v.addInterface(state.KindLoopback, loopbackName(instance), "Loopback", mac)
}

func (v *VPP) hwInterfaceSetMtu(_ *server.Session, req *interfaces.HwInterfaceSetMtu) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.HwInterfaceSetMtuReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	i.LinkMTU = req.Mtu
	return one(&interfaces.HwInterfaceSetMtuReply{})
}

func (v *VPP) swInterfaceGetMacAddress(_ *server.Session, req *interfaces.SwInterfaceGetMacAddress) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.SwInterfaceGetMacAddressReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	return one(&interfaces.SwInterfaceGetMacAddressReply{MacAddress: macOf(i)})
}

func (v *VPP) deleteLoopback(_ *server.Session, req *interfaces.DeleteLoopback) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Kind != state.KindLoopback {
		return one(&interfaces.DeleteLoopbackReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	v.deleteInterface(i)
	return one(&interfaces.DeleteLoopbackReply{})
}

func (v *VPP) createVlanSubif(_ *server.Session, req *interfaces.CreateVlanSubif) []api.Message {
	parent, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&interfaces.CreateVlanSubifReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	name := parent.Name + "." + strconv.FormatUint(uint64(req.VlanID), 10)
	if _, exists := v.state.InterfaceByName(name); exists {
		return one(&interfaces.CreateVlanSubifReply{Retval: retval(api.VLAN_ALREADY_EXISTS)})
	}
	mac, _ := net.ParseMAC(parent.MAC)
	i := v.addInterface(state.KindSubif, name, parent.DevType, mac)
	i.Sub = &state.SubInterface{Parent: parent.SwIfIndex, SubID: req.VlanID, VlanID: req.VlanID}
	return one(&interfaces.CreateVlanSubifReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func (v *VPP) deleteSubif(_ *server.Session, req *interfaces.DeleteSubif) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Sub == nil {
		return one(&interfaces.DeleteSubifReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	v.deleteInterface(i)
	return one(&interfaces.DeleteSubifReply{})
}
