package vpp

import (
	"strconv"

	"github.com/networkservicemesh/govpp/binapi/ethernet_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"github.com/networkservicemesh/govpp/binapi/ipsec"
	"github.com/networkservicemesh/govpp/binapi/memif"
	"github.com/networkservicemesh/govpp/binapi/tunnel_types"
	"github.com/networkservicemesh/govpp/binapi/vlib"
	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// registerRecorded wires the objects the simulator remembers and dumps but carries no
// traffic for: memif, wireguard, ipsec interfaces, and the odd vlib/vpe queries.
func (v *VPP) registerRecorded() {
	on(v, v.showVersion)
	on(v, v.addNodeNext)
	on(v, v.memifSocketFilenameAddDelV2)
	on(v, v.memifCreate)
	on(v, v.memifDelete)
	on(v, v.memifDump)
	on(v, v.wireguardInterfaceCreate)
	on(v, v.wireguardInterfaceDelete)
	on(v, v.wireguardInterfaceDump)
	on(v, v.wireguardPeerAdd)
	on(v, v.wireguardPeerRemove)
	on(v, v.wireguardPeersDump)
	on(v, v.wantWireguardPeerEvents)
	on(v, v.ipsecItfCreate)
	on(v, v.ipsecItfDelete)
	on(v, v.ipsecItfDump)
}

func (v *VPP) showVersion(_ *server.Session, _ *vpe.ShowVersion) []api.Message {
	return one(&vpe.ShowVersionReply{Program: "vpe", Version: Version, BuildDirectory: "vppsim"})
}

// addNodeNext always succeeds: the simulator has no graph, so every arc is the first.
func (v *VPP) addNodeNext(_ *server.Session, _ *vlib.AddNodeNext) []api.Message {
	return one(&vlib.AddNodeNextReply{NextIndex: 1})
}

func (v *VPP) memifSocketFilenameAddDelV2(_ *server.Session, req *memif.MemifSocketFilenameAddDelV2) []api.Message {
	id := req.SocketID
	if !req.IsAdd {
		if _, ok := v.state.MemifSockets[id]; !ok || id == 0 {
			return one(&memif.MemifSocketFilenameAddDelV2Reply{Retval: retval(api.NO_SUCH_ENTRY)})
		}
		delete(v.state.MemifSockets, id)
		return one(&memif.MemifSocketFilenameAddDelV2Reply{SocketID: id})
	}
	if id == anyIndex {
		id = v.unusedMemifSocketID()
	} else if _, exists := v.state.MemifSockets[id]; exists {
		return one(&memif.MemifSocketFilenameAddDelV2Reply{Retval: retval(api.ENTRY_ALREADY_EXISTS)})
	}
	v.state.MemifSockets[id] = req.SocketFilename
	return one(&memif.MemifSocketFilenameAddDelV2Reply{SocketID: id})
}

// unusedMemifSocketID draws socket IDs as VPP does: from VPP's random_u32 generator (a linear
// congruential one) seeded with 0 at start, skipping IDs in use. Every VPP hands out the same
// sequence: 1013904223, 1196435762, 3519870697, ...
func (v *VPP) unusedMemifSocketID() uint32 {
	for {
		v.memifSeed = 1664525*v.memifSeed + 1013904223
		if _, used := v.state.MemifSockets[v.memifSeed]; !used && v.memifSeed != anyIndex {
			return v.memifSeed
		}
	}
}

func (v *VPP) memifCreate(_ *server.Session, req *memif.MemifCreate) []api.Message {
	if _, ok := v.state.MemifSockets[req.SocketID]; !ok {
		return one(&memif.MemifCreateReply{Retval: retval(api.INVALID_ARGUMENT)})
	}
	for _, i := range v.state.Interfaces {
		if i.Memif != nil && i.Memif.SocketID == req.SocketID && i.Memif.ID == req.ID {
			return one(&memif.MemifCreateReply{Retval: retval(api.SUBIF_ALREADY_EXISTS)})
		}
	}
	mac := req.HwAddr.ToMAC()
	if req.HwAddr == (ethernet_types.MacAddress{}) {
		mac = randomMAC()
	}
	if req.Mode == memif.MEMIF_MODE_API_IP {
		mac = nil // an IP-mode memif has no L2 address, and VPP reports no MTU until it connects
	}
	name := "memif" + strconv.FormatUint(uint64(req.SocketID), 10) + "/" + strconv.FormatUint(uint64(req.ID), 10)
	i := v.addInterface(state.KindMemif, name, "memif", mac)
	i.Memif = &state.Memif{ID: req.ID, SocketID: req.SocketID, Role: uint32(req.Role), Mode: uint32(req.Mode)}
	if req.Mode == memif.MEMIF_MODE_API_IP {
		i.MTU, i.LinkMTU = [4]uint32{}, 0
	}
	return one(&memif.MemifCreateReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func (v *VPP) memifDelete(_ *server.Session, req *memif.MemifDelete) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Memif == nil {
		return one(&memif.MemifDeleteReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	v.deleteInterface(i)
	return one(&memif.MemifDeleteReply{})
}

func (v *VPP) memifDump(_ *server.Session, _ *memif.MemifDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.Memif == nil {
			continue
		}
		out = append(out, &memif.MemifDetails{
			SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex),
			HwAddr:    macOf(i),
			ID:        i.Memif.ID,
			Role:      memif.MemifRole(i.Memif.Role),
			Mode:      memif.MemifMode(i.Memif.Mode),
			SocketID:  i.Memif.SocketID,
			Flags:     statusFlags(i),
			IfName:    i.Name,
		})
	}
	return out
}

func (v *VPP) wireguardInterfaceCreate(_ *server.Session, req *wireguard.WireguardInterfaceCreate) []api.Message {
	instance := req.Interface.UserInstance
	if instance == anyIndex {
		instance = 0
		for v.wireguardInstanceTaken(instance) {
			instance++
		}
	} else if v.wireguardInstanceTaken(instance) {
		return one(&wireguard.WireguardInterfaceCreateReply{Retval: retval(api.INSTANCE_IN_USE)})
	}
	i := v.addInterface(state.KindWireguard, "wg"+strconv.FormatUint(uint64(instance), 10), "Wireguard Tunnel", nil)
	// VPP reports no MTU for a new wireguard interface.
	i.MTU, i.LinkMTU = [4]uint32{}, 0
	i.Wireguard = &state.Wireguard{
		UserInstance: instance,
		PublicKey:    append([]byte(nil), req.Interface.PublicKey...),
		Port:         req.Interface.Port,
		SrcIP:        req.Interface.SrcIP.String(),
	}
	return one(&wireguard.WireguardInterfaceCreateReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func (v *VPP) wireguardInstanceTaken(instance uint32) bool {
	for _, i := range v.state.Interfaces {
		if i.Wireguard != nil && i.Wireguard.UserInstance == instance {
			return true
		}
	}
	return false
}

func (v *VPP) wireguardInterfaceDelete(_ *server.Session, req *wireguard.WireguardInterfaceDelete) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Wireguard == nil {
		return one(&wireguard.WireguardInterfaceDeleteReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	for index, p := range v.state.WireguardPeers {
		if p.SwIfIndex == i.SwIfIndex {
			delete(v.state.WireguardPeers, index)
		}
	}
	v.deleteInterface(i)
	return one(&wireguard.WireguardInterfaceDeleteReply{})
}

func (v *VPP) wireguardInterfaceDump(_ *server.Session, req *wireguard.WireguardInterfaceDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.Wireguard == nil || (uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex) {
			continue
		}
		src, _ := ip_types.ParseAddress(i.Wireguard.SrcIP)
		out = append(out, &wireguard.WireguardInterfaceDetails{Interface: wireguard.WireguardInterface{
			UserInstance: i.Wireguard.UserInstance,
			SwIfIndex:    interface_types.InterfaceIndex(i.SwIfIndex),
			PrivateKey:   make([]byte, 32),
			PublicKey:    i.Wireguard.PublicKey,
			Port:         i.Wireguard.Port,
			SrcIP:        src,
		}})
	}
	return out
}

func (v *VPP) wireguardPeerAdd(_ *server.Session, req *wireguard.WireguardPeerAdd) []api.Message {
	p := req.Peer
	if i, ok := v.iface(uint32(p.SwIfIndex)); !ok || i.Wireguard == nil {
		return one(&wireguard.WireguardPeerAddReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	var index uint32
	for v.state.WireguardPeers[index] != nil {
		index++
	}
	peer := &state.WireguardPeer{
		Index:     index,
		SwIfIndex: uint32(p.SwIfIndex),
		PublicKey: append([]byte(nil), p.PublicKey...),
		Endpoint:  p.Endpoint.String(),
		Port:      p.Port,
		Keepalive: p.PersistentKeepalive,
	}
	for _, prefix := range p.AllowedIps {
		peer.Allowed = append(peer.Allowed, prefix.String())
	}
	// No handshake is simulated: a peer counts as established at once, so clients that
	// wait for it (sdk-vpp's peerup) proceed. No traffic crosses wireguard here.
	peer.Flags = uint8(wireguard.WIREGUARD_PEER_ESTABLISHED)
	v.state.WireguardPeers[index] = peer
	for s, pid := range v.eventsFor[wireguardPeerEvents] {
		ev := &wireguard.WireguardPeerEvent{PID: pid, PeerIndex: index, Flags: wireguard.WIREGUARD_PEER_ESTABLISHED}
		if err := s.Send(ev, 0); err != nil {
			v.log.Warn("sending wireguard_peer_event", "client", s.Index, "error", err)
		}
	}
	return one(&wireguard.WireguardPeerAddReply{PeerIndex: index})
}

func (v *VPP) wireguardPeerRemove(_ *server.Session, req *wireguard.WireguardPeerRemove) []api.Message {
	if _, ok := v.state.WireguardPeers[req.PeerIndex]; !ok {
		return one(&wireguard.WireguardPeerRemoveReply{Retval: retval(api.NO_SUCH_ENTRY)})
	}
	delete(v.state.WireguardPeers, req.PeerIndex)
	return one(&wireguard.WireguardPeerRemoveReply{})
}

func (v *VPP) wireguardPeersDump(_ *server.Session, req *wireguard.WireguardPeersDump) []api.Message {
	var out []api.Message
	for _, index := range state.SortedIndexes(v.state.WireguardPeers) {
		if req.PeerIndex != anyIndex && req.PeerIndex != index {
			continue
		}
		p := v.state.WireguardPeers[index]
		endpoint, _ := ip_types.ParseAddress(p.Endpoint)
		peer := wireguard.WireguardPeer{
			PeerIndex:           p.Index,
			PublicKey:           p.PublicKey,
			Port:                p.Port,
			PersistentKeepalive: p.Keepalive,
			Endpoint:            endpoint,
			SwIfIndex:           interface_types.InterfaceIndex(p.SwIfIndex),
			Flags:               wireguard.WireguardPeerFlags(p.Flags),
		}
		for _, a := range p.Allowed {
			if prefix, err := ip_types.ParsePrefix(a); err == nil {
				peer.AllowedIps = append(peer.AllowedIps, prefix)
			}
		}
		peer.NAllowedIps = uint8(len(peer.AllowedIps))
		out = append(out, &wireguard.WireguardPeersDetails{Peer: peer})
	}
	return out
}

const wireguardPeerEvents = "wireguard_peer_event"

// wantWireguardPeerEvents registers for the event announcing each new (at once
// established) peer.
func (v *VPP) wantWireguardPeerEvents(s *server.Session, req *wireguard.WantWireguardPeerEvents) []api.Message {
	subs := v.eventsFor[wireguardPeerEvents]
	if subs == nil {
		subs = make(map[*server.Session]uint32)
		v.eventsFor[wireguardPeerEvents] = subs
	}
	if req.EnableDisable != 0 {
		subs[s] = req.PID
	} else {
		delete(subs, s)
	}
	return one(&wireguard.WantWireguardPeerEventsReply{})
}

func (v *VPP) ipsecItfCreate(_ *server.Session, req *ipsec.IpsecItfCreate) []api.Message {
	instance := req.Itf.UserInstance
	if instance == anyIndex {
		instance = 0
		for v.ipsecInstanceTaken(instance) {
			instance++
		}
	} else if v.ipsecInstanceTaken(instance) {
		return one(&ipsec.IpsecItfCreateReply{Retval: retval(api.INSTANCE_IN_USE)})
	}
	i := v.addInterface(state.KindIpsec, "ipsec"+strconv.FormatUint(uint64(instance), 10), "IPSEC Tunnel", nil)
	i.LinkMTU = 0 // VPP reports the L3 MTU only
	i.Ipsec = &state.IpsecInterface{UserInstance: instance, Mode: uint32(req.Itf.Mode)}
	return one(&ipsec.IpsecItfCreateReply{SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)})
}

func (v *VPP) ipsecInstanceTaken(instance uint32) bool {
	for _, i := range v.state.Interfaces {
		if i.Ipsec != nil && i.Ipsec.UserInstance == instance {
			return true
		}
	}
	return false
}

func (v *VPP) ipsecItfDelete(_ *server.Session, req *ipsec.IpsecItfDelete) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok || i.Ipsec == nil {
		return one(&ipsec.IpsecItfDeleteReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	v.deleteInterface(i)
	return one(&ipsec.IpsecItfDeleteReply{})
}

func (v *VPP) ipsecItfDump(_ *server.Session, req *ipsec.IpsecItfDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if i.Ipsec == nil || (uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex) {
			continue
		}
		out = append(out, &ipsec.IpsecItfDetails{Itf: ipsec.IpsecItf{
			UserInstance: i.Ipsec.UserInstance,
			Mode:         tunnel_types.TunnelMode(i.Ipsec.Mode),
			SwIfIndex:    interface_types.InterfaceIndex(i.SwIfIndex),
		}})
	}
	return out
}
