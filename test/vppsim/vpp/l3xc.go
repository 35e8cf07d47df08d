package vpp

import (
	"github.com/networkservicemesh/govpp/binapi/fib_types"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l3xc"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
)

func (v *VPP) registerL3xc() {
	on(v, v.l3xcUpdate)
	on(v, v.l3xcDel)
	on(v, v.l3xcDump)
}

func (v *VPP) l3xcUpdate(_ *server.Session, req *l3xc.L3xcUpdate) []api.Message {
	x := req.L3xc
	i, ok := v.iface(uint32(x.SwIfIndex))
	if !ok {
		return one(&l3xc.L3xcUpdateReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	if len(x.Paths) == 0 {
		return one(&l3xc.L3xcUpdateReply{Retval: retval(api.INVALID_VALUE)})
	}
	paths := append([]fib_types.FibPath(nil), x.Paths...)
	if x.IsIP6 {
		i.L3xcIP6 = paths
	} else {
		i.L3xcIP4 = paths
	}
	return one(&l3xc.L3xcUpdateReply{StatsIndex: i.SwIfIndex})
}

func (v *VPP) l3xcDel(_ *server.Session, req *l3xc.L3xcDel) []api.Message {
	i, ok := v.iface(uint32(req.SwIfIndex))
	if !ok {
		return one(&l3xc.L3xcDelReply{Retval: retval(api.INVALID_SW_IF_INDEX)})
	}
	paths := &i.L3xcIP4
	if req.IsIP6 {
		paths = &i.L3xcIP6
	}
	if *paths == nil {
		// VPP's answer for an interface without an l3xc.
		return one(&l3xc.L3xcDelReply{Retval: retval(api.INVALID_VALUE)})
	}
	*paths = nil
	return one(&l3xc.L3xcDelReply{})
}

func (v *VPP) l3xcDump(_ *server.Session, req *l3xc.L3xcDump) []api.Message {
	var out []api.Message
	for _, i := range v.state.SortedInterfaces() {
		if uint32(req.SwIfIndex) != anyIndex && uint32(req.SwIfIndex) != i.SwIfIndex {
			continue
		}
		for _, fam := range []struct {
			ip6   bool
			paths []fib_types.FibPath
		}{{false, i.L3xcIP4}, {true, i.L3xcIP6}} {
			if fam.paths == nil {
				continue
			}
			out = append(out, &l3xc.L3xcDetails{L3xc: l3xc.L3xc{
				SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex),
				IsIP6:     fam.ip6,
				NPaths:    uint8(len(fam.paths)),
				Paths:     fam.paths,
			}})
		}
	}
	return out
}
