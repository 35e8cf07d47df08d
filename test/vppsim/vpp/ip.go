package vpp

import (
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/ip_types"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// firstDynamicTableID is where ip_table_allocate starts looking, far from IDs that
// configuration usually names explicitly.
const firstDynamicTableID = 1 << 20

func (v *VPP) registerIP() {
	on(v, v.ipAddressDump)
	on(v, v.ipTableAddDel)
	on(v, v.ipTableAllocate)
	on(v, v.ipTableDump)
	on(v, v.ipRouteAddDel)
	on(v, v.ipRouteDump)
	on(v, v.ipNeighborAddDel)
	on(v, v.ipNeighborDump)
}

func (v *VPP) ipAddressDump(_ *server.Session, req *ip.IPAddressDump) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return nil
	}
	var out []api.Message
	for _, a := range i.Addresses {
		prefix, err := ip_types.ParseAddressWithPrefix(a)
		if err != nil || (prefix.Address.Af == ip_types.ADDRESS_IP6) != req.IsIPv6 {
			continue
		}
		out = append(out, &ip.IPAddressDetails{SwIfIndex: req.SwIfIndex, Prefix: prefix})
	}
	return out
}

func (v *VPP) ipTableAddDel(_ *server.Session, req *ip.IPTableAddDel) []api.Message {
	key := state.TableKey(req.Table.TableID, req.Table.IsIP6)
	if req.IsAdd {
		if _, exists := v.state.Tables[key]; !exists {
			v.state.Tables[key] = &state.Table{ID: req.Table.TableID, IsIP6: req.Table.IsIP6, Name: req.Table.Name}
		}
		return one(&ip.IPTableAddDelReply{})
	}
	// VPP never deletes table 0 and silently ignores tables it does not have.
	if req.Table.TableID != 0 {
		delete(v.state.Tables, key)
		for rk, r := range v.state.Routes {
			if r.TableID == req.Table.TableID && isRouteIP6(r) == req.Table.IsIP6 {
				delete(v.state.Routes, rk)
			}
		}
	}
	return one(&ip.IPTableAddDelReply{})
}

func (v *VPP) ipTableAllocate(_ *server.Session, req *ip.IPTableAllocate) []api.Message {
	id := req.Table.TableID
	if id == anyIndex {
		for id = firstDynamicTableID; ; id++ {
			if _, taken := v.state.Tables[state.TableKey(id, req.Table.IsIP6)]; !taken {
				break
			}
		}
	}
	key := state.TableKey(id, req.Table.IsIP6)
	if _, exists := v.state.Tables[key]; !exists {
		v.state.Tables[key] = &state.Table{ID: id, IsIP6: req.Table.IsIP6, Name: req.Table.Name}
	}
	t := v.state.Tables[key]
	return one(&ip.IPTableAllocateReply{Table: ip.IPTable{TableID: t.ID, IsIP6: t.IsIP6, Name: t.Name}})
}

func (v *VPP) ipTableDump(_ *server.Session, _ *ip.IPTableDump) []api.Message {
	var out []api.Message
	for _, key := range state.SortedKeys(v.state.Tables) {
		t := v.state.Tables[key]
		out = append(out, &ip.IPTableDetails{Table: ip.IPTable{TableID: t.ID, IsIP6: t.IsIP6, Name: t.Name}})
	}
	return out
}

func isRouteIP6(r *state.Route) bool {
	p, err := ip_types.ParsePrefix(r.Prefix)
	return err == nil && p.Address.Af == ip_types.ADDRESS_IP6
}

// ipRouteAddDel adds paths to a prefix (replacing them unless multipath) or removes them;
// removing a route that is not there succeeds, as in VPP.
func (v *VPP) ipRouteAddDel(_ *server.Session, req *ip.IPRouteAddDel) []api.Message {
	r := req.Route
	ip6 := r.Prefix.Address.Af == ip_types.ADDRESS_IP6
	if _, ok := v.state.Tables[state.TableKey(r.TableID, ip6)]; !ok {
		return one(&ip.IPRouteAddDelReply{Retval: retval(api.NO_SUCH_FIB)})
	}
	for _, p := range r.Paths {
		if p.SwIfIndex != anyIndex && p.Type == fib_types.FIB_API_PATH_TYPE_NORMAL {
			if _, ok := v.iface(p.SwIfIndex); !ok {
				return one(&ip.IPRouteAddDelReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
			}
		}
	}
	prefix := r.Prefix.String()
	key := state.RouteKey(r.TableID, ip6, prefix)
	existing, exists := v.state.Routes[key]
	if req.IsAdd {
		if exists && req.IsMultipath {
			existing.Paths = append(existing.Paths, r.Paths...)
		} else {
			v.state.Routes[key] = &state.Route{TableID: r.TableID, Prefix: prefix, Paths: append([]fib_types.FibPath(nil), r.Paths...)}
		}
		return one(&ip.IPRouteAddDelReply{})
	}
	if !exists {
		return one(&ip.IPRouteAddDelReply{})
	}
	if req.IsMultipath && len(r.Paths) > 0 {
		existing.Paths = removePaths(existing.Paths, r.Paths)
		if len(existing.Paths) > 0 {
			return one(&ip.IPRouteAddDelReply{})
		}
	}
	delete(v.state.Routes, key)
	return one(&ip.IPRouteAddDelReply{})
}

func removePaths(have, drop []fib_types.FibPath) []fib_types.FibPath {
	var out []fib_types.FibPath
	for _, h := range have {
		keep := true
		for _, d := range drop {
			if h.SwIfIndex == d.SwIfIndex && h.Nh == d.Nh && h.TableID == d.TableID {
				keep = false
			}
		}
		if keep {
			out = append(out, h)
		}
	}
	return out
}

func (v *VPP) ipRouteDump(_ *server.Session, req *ip.IPRouteDump) []api.Message {
	var out []api.Message
	for _, key := range state.SortedKeys(v.state.Routes) {
		r := v.state.Routes[key]
		if r.TableID != req.Table.TableID || isRouteIP6(r) != req.Table.IsIP6 {
			continue
		}
		prefix, err := ip_types.ParsePrefix(r.Prefix)
		if err != nil {
			continue
		}
		out = append(out, &ip.IPRouteDetails{Route: ip.IPRoute{
			TableID: r.TableID,
			Prefix:  prefix,
			NPaths:  uint8(len(r.Paths)),
			Paths:   r.Paths,
		}})
	}
	return out
}

func (v *VPP) ipNeighborAddDel(_ *server.Session, req *ip_neighbor.IPNeighborAddDel) []api.Message {
	n := req.Neighbor
	if _, ok := v.iface(uint32(n.SwIfIndex)); !ok {
		return one(&ip_neighbor.IPNeighborAddDelReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	ipText := n.IPAddress.String()
	key := state.NeighborKey(uint32(n.SwIfIndex), ipText)
	if req.IsAdd {
		v.state.Neighbors[key] = &state.Neighbor{
			SwIfIndex: uint32(n.SwIfIndex),
			IP:        ipText,
			MAC:       n.MacAddress.String(),
			Flags:     uint8(n.Flags),
		}
		return one(&ip_neighbor.IPNeighborAddDelReply{})
	}
	if _, ok := v.state.Neighbors[key]; !ok {
		return one(&ip_neighbor.IPNeighborAddDelReply{Retval: retval(api.NO_SUCH_ENTRY)})
	}
	delete(v.state.Neighbors, key)
	return one(&ip_neighbor.IPNeighborAddDelReply{})
}

func (v *VPP) ipNeighborDump(_ *server.Session, req *ip_neighbor.IPNeighborDump) []api.Message {
	var out []api.Message
	for _, key := range state.SortedKeys(v.state.Neighbors) {
		n := v.state.Neighbors[key]
		if uint32(req.SwIfIndex) != anyIndex && n.SwIfIndex != uint32(req.SwIfIndex) {
			continue
		}
		addr, err := ip_types.ParseAddress(n.IP)
		if err != nil || addr.Af != req.Af {
			continue
		}
		mac, err := parseMAC(n.MAC)
		if err != nil {
			continue
		}
		out = append(out, &ip_neighbor.IPNeighborDetails{Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex:  interface_types.InterfaceIndex(n.SwIfIndex),
			Flags:      ip_neighbor.IPNeighborFlags(n.Flags),
			MacAddress: mac,
			IPAddress:  addr,
		}})
	}
	return out
}
