package state

import (
	"github.com/networkservicemesh/govpp/binapi/fib_types"
)

// Kind says what created an interface, which decides its name and how (or whether) it
// carries traffic.
type Kind string

// Interface kinds the simulator knows.
const (
	KindLocal     Kind = "local"
	KindTap       Kind = "tap"
	KindTun       Kind = "tun"
	KindAfPacket  Kind = "af_packet"
	KindVxlan     Kind = "vxlan"
	KindLoopback  Kind = "loopback"
	KindSubif     Kind = "subif"
	KindMemif     Kind = "memif"
	KindWireguard Kind = "wireguard"
	KindIpsec     Kind = "ipsec"
)

// Interface is one VPP software interface.
type Interface struct {
	SwIfIndex uint32 `json:"sw_if_index"`
	Name      string `json:"name"`
	Kind      Kind   `json:"kind"`
	DevType   string `json:"dev_type"`
	Tag       string `json:"tag,omitempty"`
	AdminUp   bool   `json:"admin_up"`
	LinkUp    bool   `json:"link_up"`
	MAC       string `json:"mac,omitempty"`
	// MTU is VPP's per-protocol MTU: L3, IPv4, IPv6, MPLS.
	MTU     [4]uint32 `json:"mtu"`
	LinkMTU uint16    `json:"link_mtu"`
	RxMode  uint32    `json:"rx_mode"`

	IP4Table     uint32   `json:"ip4_table"`
	IP6Table     uint32   `json:"ip6_table"`
	UnnumberedOf *uint32  `json:"unnumbered_of,omitempty"`
	Addresses    []string `json:"addresses,omitempty"`

	// L2XconnectTx is where frames received on this interface are sent; VPP configures each
	// direction separately.
	L2XconnectTx   *uint32             `json:"l2_xconnect_tx,omitempty"`
	Bridge         *BridgePort         `json:"bridge,omitempty"`
	VlanTagRewrite *VlanTagRewrite     `json:"vlan_tag_rewrite,omitempty"`
	L3xcIP4        []fib_types.FibPath `json:"l3xc_ip4,omitempty"`
	L3xcIP6        []fib_types.FibPath `json:"l3xc_ip6,omitempty"`
	ACLs           *ACLBinding         `json:"acls,omitempty"`
	Sub            *SubInterface       `json:"sub,omitempty"`
	Tap            *Tap                `json:"tap,omitempty"`
	AfPacket       *AfPacket           `json:"af_packet,omitempty"`
	Vxlan          *Vxlan              `json:"vxlan,omitempty"`
	Memif          *Memif              `json:"memif,omitempty"`
	Wireguard      *Wireguard          `json:"wireguard,omitempty"`
	Ipsec          *IpsecInterface     `json:"ipsec,omitempty"`
}

// BridgePort is an interface's membership in a bridge domain.
type BridgePort struct {
	BdID     uint32 `json:"bd_id"`
	PortType uint32 `json:"port_type"`
	Shg      uint8  `json:"shg"`
}

// VlanTagRewrite is the L2 VLAN tag rewrite set on an interface.
type VlanTagRewrite struct {
	Op        uint32 `json:"op"`
	PushDot1q uint32 `json:"push_dot1q"`
	Tag1      uint32 `json:"tag1"`
	Tag2      uint32 `json:"tag2"`
}

// ACLBinding is the ordered ACL list applied to an interface.
type ACLBinding struct {
	Input  []uint32 `json:"input"`
	Output []uint32 `json:"output"`
}

// SubInterface is the parent and VLAN of a sub-interface.
type SubInterface struct {
	Parent uint32 `json:"parent"`
	SubID  uint32 `json:"sub_id"`
	VlanID uint32 `json:"vlan_id"`
}

// Tap is the kernel side of a tap or tun interface.
type Tap struct {
	ID            uint32 `json:"id"`
	HostIfName    string `json:"host_if_name"`
	HostNamespace string `json:"host_namespace,omitempty"`
	HostMAC       string `json:"host_mac,omitempty"`
	HostMTU       uint32 `json:"host_mtu,omitempty"`
	Flags         uint32 `json:"flags"`
	Tun           bool   `json:"tun"`
}

// AfPacket is the host interface an af_packet interface is bound to.
type AfPacket struct {
	HostIfName     string `json:"host_if_name"`
	L4CksumOffload bool   `json:"l4_cksum_offload"`
}

// Vxlan is a VXLAN tunnel's endpoint configuration.
type Vxlan struct {
	Instance       uint32 `json:"instance"`
	Src            string `json:"src"`
	Dst            string `json:"dst"`
	SrcPort        uint16 `json:"src_port"`
	DstPort        uint16 `json:"dst_port"`
	Vni            uint32 `json:"vni"`
	EncapVrfID     uint32 `json:"encap_vrf_id"`
	DecapNextIndex uint32 `json:"decap_next_index"`
	McastSwIfIndex uint32 `json:"mcast_sw_if_index"`
	IsL3           bool   `json:"is_l3"`
}

// Memif is a memif interface's configuration (recorded only).
type Memif struct {
	ID       uint32 `json:"id"`
	SocketID uint32 `json:"socket_id"`
	Role     uint32 `json:"role"`
	Mode     uint32 `json:"mode"`
}

// Wireguard is a wireguard interface's configuration (recorded only).
type Wireguard struct {
	UserInstance uint32 `json:"user_instance"`
	PublicKey    []byte `json:"public_key"`
	Port         uint16 `json:"port"`
	SrcIP        string `json:"src_ip"`
}

// IpsecInterface is an ipsec interface (recorded only).
type IpsecInterface struct {
	UserInstance uint32 `json:"user_instance"`
	Mode         uint32 `json:"mode"`
}
