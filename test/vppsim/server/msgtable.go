package server

import (
	"reflect"
	"sort"
	"strings"

	"go.fd.io/govpp/api"
)

// sockclntCreateID is fixed: govpp's socketclient sends sockclnt_create as message 15
// before it has seen any table, exactly as VPP expects.
const sockclntCreateID = 15

const preferredBinapi = "github.com/networkservicemesh/govpp/binapi"

// notInTheBuild says whether upstream VPP v24.10, as built for these tests (../shared/vpp), lacks
// a message: the plugins it is built without (af_xdp, cnat) and NSM's patches (get_buffers_stats,
// and want_ping_finished_events, whose NSM definition differs from upstream's). The simulator
// offers what that VPP offers, so a client learns of a missing message the same way from both:
// before sending it (docs/vpp.md).
func notInTheBuild(name string) bool {
	switch name {
	case "get_buffers_stats", "get_buffers_stats_reply", "want_ping_finished_events":
		return true
	}
	return strings.HasPrefix(name, "af_xdp_") || strings.HasPrefix(name, "cnat_")
}

// MessageTable maps VPP message IDs to their binapi prototypes and back.
type MessageTable struct {
	byID   map[uint16]api.Message
	byName map[string]uint16 // name_crc -> ID
	// replyByName finds a request's reply prototype by plain message name.
	byPlainName map[string]api.Message
}

// NewMessageTable numbers every binapi message registered in this process. IDs are
// assigned in name order, which keeps them stable between runs of the same build.
func NewMessageTable() *MessageTable {
	t := &MessageTable{
		byID:        make(map[uint16]api.Message),
		byName:      make(map[string]uint16),
		byPlainName: make(map[string]api.Message),
	}
	var names []string
	protos := make(map[string]api.Message)
	for pkgPath, msgs := range api.GetRegisteredMessages() {
		preferred := pkgPath == preferredBinapi
		for nameCrc, msg := range msgs {
			if notInTheBuild(msg.GetMessageName()) {
				continue
			}
			_, seen := protos[nameCrc]
			if !seen {
				names = append(names, nameCrc)
			}
			// The same message may be registered by govpp's own packages too; decode into
			// the networkservicemesh types so handlers see the types clients use.
			if !seen || preferred {
				protos[nameCrc] = msg
			}
			if _, seen := t.byPlainName[msg.GetMessageName()]; !seen || preferred {
				t.byPlainName[msg.GetMessageName()] = msg
			}
		}
	}
	sort.Strings(names)
	next := uint16(1)
	for _, nameCrc := range names {
		msg := protos[nameCrc]
		id := next
		if msg.GetMessageName() == "sockclnt_create" {
			id = sockclntCreateID
		} else {
			if next == sockclntCreateID {
				next++
				id = next
			}
			next++
		}
		t.byID[id] = msg
		t.byName[nameCrc] = id
	}
	return t
}

// ID returns the message ID of msg's type, if the table knows it.
func (t *MessageTable) ID(msg api.Message) (uint16, bool) {
	id, ok := t.byName[msg.GetMessageName()+"_"+msg.GetCrcString()]
	return id, ok
}

// New returns a fresh, empty message of the type registered under id.
func (t *MessageTable) New(id uint16) (api.Message, bool) {
	proto, ok := t.byID[id]
	if !ok {
		return nil, false
	}
	return reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message), true
}

// ReplyTo returns a fresh reply message for a request name (x -> x_reply), if one exists.
func (t *MessageTable) ReplyTo(requestName string) (api.Message, bool) {
	if strings.HasSuffix(requestName, "_dump") {
		return nil, false
	}
	proto, ok := t.byPlainName[requestName+"_reply"]
	if !ok {
		return nil, false
	}
	return reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message), true
}

// Entries lists the table as name_crc -> ID pairs for the handshake.
func (t *MessageTable) Entries() map[string]uint16 {
	return t.byName
}
