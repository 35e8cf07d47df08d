package vppinit_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/govpp/binapi/acl"
	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/ip_neighbor"
	"github.com/networkservicemesh/govpp/binapi/memclnt"
)

const (
	// uplinkSwIfIndex is the index the recording VPP gives the interfaces it creates.
	uplinkSwIfIndex = interface_types.InterfaceIndex(7)
	// vppOwnDevice is an interface only VPP has (as a DPDK device would be); every interface dump
	// lists it.
	vppOwnDevice    = "TenGigabitEthernet0/8/0"
	vppOwnSwIfIndex = interface_types.InterfaceIndex(3)
)

// recordingVPP answers through govpp's mock adapter and records every request it decodes.
type recordingVPP struct {
	conn *core.Connection

	mu       sync.Mutex
	requests []api.Message
	nextACL  uint32
	failOn   string
}

type exchange struct {
	request func() api.Message
	reply   func(v *recordingVPP) api.Message
}

var exchanges = map[string]exchange{
	"af_packet_create_v3": {
		func() api.Message { return new(af_packet.AfPacketCreateV3) },
		func(*recordingVPP) api.Message { return &af_packet.AfPacketCreateV3Reply{SwIfIndex: uplinkSwIfIndex} },
	},
	"af_xdp_create_v3": {
		func() api.Message { return new(af_xdp.AfXdpCreateV3) },
		func(*recordingVPP) api.Message { return &af_xdp.AfXdpCreateV3Reply{SwIfIndex: uplinkSwIfIndex} },
	},
	"sw_interface_set_mtu": {
		func() api.Message { return new(interfaces.SwInterfaceSetMtu) },
		func(*recordingVPP) api.Message { return new(interfaces.SwInterfaceSetMtuReply) },
	},
	"sw_interface_set_flags": {
		func() api.Message { return new(interfaces.SwInterfaceSetFlags) },
		func(*recordingVPP) api.Message { return new(interfaces.SwInterfaceSetFlagsReply) },
	},
	"sw_interface_add_del_address": {
		func() api.Message { return new(interfaces.SwInterfaceAddDelAddress) },
		func(*recordingVPP) api.Message { return new(interfaces.SwInterfaceAddDelAddressReply) },
	},
	"acl_add_replace": {
		func() api.Message { return new(acl.ACLAddReplace) },
		func(v *recordingVPP) api.Message {
			v.nextACL++
			return &acl.ACLAddReplaceReply{ACLIndex: v.nextACL}
		},
	},
	"acl_interface_set_acl_list": {
		func() api.Message { return new(acl.ACLInterfaceSetACLList) },
		func(*recordingVPP) api.Message { return new(acl.ACLInterfaceSetACLListReply) },
	},
	"ip_neighbor_add_del": {
		func() api.Message { return new(ip_neighbor.IPNeighborAddDel) },
		func(*recordingVPP) api.Message { return new(ip_neighbor.IPNeighborAddDelReply) },
	},
	"ip_route_add_del": {
		func() api.Message { return new(ip.IPRouteAddDel) },
		func(*recordingVPP) api.Message { return new(ip.IPRouteAddDelReply) },
	},
	"sw_interface_set_promisc": {
		func() api.Message { return new(interfaces.SwInterfaceSetPromisc) },
		func(*recordingVPP) api.Message { return new(interfaces.SwInterfaceSetPromiscReply) },
	},
	"sw_interface_dump": {
		func() api.Message { return new(interfaces.SwInterfaceDump) },
		func(*recordingVPP) api.Message {
			return &interfaces.SwInterfaceDetails{SwIfIndex: vppOwnSwIfIndex, InterfaceName: vppOwnDevice}
		},
	},
	"control_ping": {
		func() api.Message { return new(memclnt.ControlPing) },
		func(*recordingVPP) api.Message { return new(memclnt.ControlPingReply) },
	},
}

// mockHardwiredNames are the requests whose IDs the mock adapter fixes without recording their
// names, so its reply handlers see them nameless.
var mockHardwiredNames = map[uint16]string{100: "control_ping", 200: "sw_interface_dump"}

// newRecordingVPP returns a connected recording VPP. A request named failOn is answered with a
// VPP error (retval -1).
func newRecordingVPP(t *testing.T, failOn string) *recordingVPP {
	adapter := mock.NewVppAdapter()
	v := &recordingVPP{failOn: failOn}
	adapter.MockReplyHandler(func(request mock.MessageDTO) ([]byte, uint16, bool) {
		if request.MsgName == "" {
			request.MsgName = mockHardwiredNames[request.MsgID]
		}
		ex, known := exchanges[request.MsgName]
		if !known {
			t.Errorf("unexpected VPP request %s", request.MsgName)
			return nil, 0, false
		}
		message := ex.request()
		if err := codec.DefaultCodec.DecodeMsg(request.Data, message); err != nil {
			t.Errorf("decoding %s: %v", request.MsgName, err)
			return nil, 0, false
		}
		v.mu.Lock()
		if request.MsgName != "control_ping" {
			v.requests = append(v.requests, message)
		}
		reply := ex.reply(v)
		v.mu.Unlock()
		if request.MsgName == v.failOn {
			setRetval(reply, -1)
		}
		replyID, err := adapter.GetMsgID(reply.GetMessageName(), reply.GetCrcString())
		if err != nil {
			t.Errorf("reply ID of %s: %v", reply.GetMessageName(), err)
			return nil, 0, false
		}
		data, err := adapter.ReplyBytes(request, reply)
		if err != nil {
			t.Errorf("encoding %s: %v", reply.GetMessageName(), err)
			return nil, 0, false
		}
		return data, replyID, true
	})
	conn, err := core.Connect(adapter)
	require.NoError(t, err)
	t.Cleanup(conn.Disconnect)
	v.conn = conn
	return v
}

// setRetval makes a reply carry a VPP error code.
func setRetval(reply api.Message, retval int32) {
	switch r := reply.(type) {
	case *af_packet.AfPacketCreateV3Reply:
		r.Retval = retval
	case *ip.IPRouteAddDelReply:
		r.Retval = retval
	case *interfaces.SwInterfaceAddDelAddressReply:
		r.Retval = retval
	}
}

// sent returns the recorded requests of type T, in order.
func sent[T api.Message](v *recordingVPP) []T {
	v.mu.Lock()
	defer v.mu.Unlock()
	var matching []T
	for _, request := range v.requests {
		if typed, ok := request.(T); ok {
			matching = append(matching, typed)
		}
	}
	return matching
}

func (v *recordingVPP) names() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var names []string
	for _, request := range v.requests {
		names = append(names, request.GetMessageName())
	}
	return names
}
