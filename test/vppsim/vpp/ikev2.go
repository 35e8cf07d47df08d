package vpp

import (
	"encoding/json"
	"slices"

	"github.com/networkservicemesh/govpp/binapi/ikev2"
	"github.com/networkservicemesh/govpp/binapi/ikev2_types"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
)

// IKEv2 profiles are only recorded: Records["ikev2_profile"][name] holds, per message
// name, the last request that configured the profile; ikev2_profile_dump lists their names.
// No SA is ever negotiated.
const ikev2ProfileRecords = "ikev2_profile"

func (v *VPP) registerIkev2() {
	on(v, v.ikev2ProfileAddDel)
	on(v, v.ikev2ProfileDump)
	on(v, v.ikev2SetLocalKey)
	onProfile(v, func(r *ikev2.Ikev2ProfileSetAuth) (string, api.Message) {
		return r.Name, &ikev2.Ikev2ProfileSetAuthReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2ProfileSetID) (string, api.Message) { return r.Name, &ikev2.Ikev2ProfileSetIDReply{} })
	onProfile(v, func(r *ikev2.Ikev2ProfileSetTs) (string, api.Message) { return r.Name, &ikev2.Ikev2ProfileSetTsReply{} })
	onProfile(v, func(r *ikev2.Ikev2ProfileSetUDPEncap) (string, api.Message) {
		return r.Name, &ikev2.Ikev2ProfileSetUDPEncapReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2SetTunnelInterface) (string, api.Message) {
		return r.Name, &ikev2.Ikev2SetTunnelInterfaceReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2SetResponder) (string, api.Message) { return r.Name, &ikev2.Ikev2SetResponderReply{} })
	onProfile(v, func(r *ikev2.Ikev2SetIkeTransforms) (string, api.Message) {
		return r.Name, &ikev2.Ikev2SetIkeTransformsReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2SetEspTransforms) (string, api.Message) {
		return r.Name, &ikev2.Ikev2SetEspTransformsReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2SetSaLifetime) (string, api.Message) {
		return r.Name, &ikev2.Ikev2SetSaLifetimeReply{}
	})
	onProfile(v, func(r *ikev2.Ikev2InitiateSaInit) (string, api.Message) {
		return r.Name, &ikev2.Ikev2InitiateSaInitReply{}
	})
}

func (v *VPP) records(kind string) map[string]json.RawMessage {
	m := v.state.Records[kind]
	if m == nil {
		m = make(map[string]json.RawMessage)
		v.state.Records[kind] = m
	}
	return m
}

func (v *VPP) ikev2ProfileAddDel(_ *server.Session, req *ikev2.Ikev2ProfileAddDel) []api.Message {
	profiles := v.records(ikev2ProfileRecords)
	_, exists := profiles[req.Name]
	switch {
	case req.IsAdd == exists:
		// VPP's ikev2 plugin answers both with its generic error.
		return one(&ikev2.Ikev2ProfileAddDelReply{Retval: retval(api.UNSPECIFIED)})
	case req.IsAdd:
		profiles[req.Name] = json.RawMessage(`{}`)
	default:
		delete(profiles, req.Name)
	}
	return one(&ikev2.Ikev2ProfileAddDelReply{})
}

// ikev2ProfileDump lists the profiles by name; the simulator keeps none of their settings.
func (v *VPP) ikev2ProfileDump(_ *server.Session, _ *ikev2.Ikev2ProfileDump) []api.Message {
	var names []string
	for name := range v.records(ikev2ProfileRecords) {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []api.Message
	for _, name := range names {
		out = append(out, &ikev2.Ikev2ProfileDetails{Profile: ikev2_types.Ikev2Profile{Name: name}})
	}
	return out
}

func (v *VPP) ikev2SetLocalKey(_ *server.Session, req *ikev2.Ikev2SetLocalKey) []api.Message {
	data, err := json.Marshal(req)
	if err != nil {
		return one(&ikev2.Ikev2SetLocalKeyReply{Retval: retval(api.INVALID_VALUE)})
	}
	v.records("ikev2_local_key")["key_file"] = data
	return one(&ikev2.Ikev2SetLocalKeyReply{})
}

// onProfile registers a message that configures an existing IKEv2 profile: it is
// recorded under the profile, and a profile that does not exist gets UNSPECIFIED (-1): VPP's
// ikev2 plugin turns its "unknown profile" error into that.
func onProfile[T api.Message](v *VPP, describe func(T) (profile string, reply api.Message)) {
	on(v, func(_ *server.Session, req T) []api.Message {
		name, reply := describe(req)
		profiles := v.records(ikev2ProfileRecords)
		raw, ok := profiles[name]
		if !ok {
			server.SetRetval(reply, retval(api.UNSPECIFIED))
			return one(reply)
		}
		settings := map[string]json.RawMessage{}
		data, err := json.Marshal(req)
		if err != nil || json.Unmarshal(raw, &settings) != nil {
			server.SetRetval(reply, retval(api.INVALID_VALUE))
			return one(reply)
		}
		settings[req.GetMessageName()] = data
		merged, err := json.Marshal(settings)
		if err != nil {
			server.SetRetval(reply, retval(api.INVALID_VALUE))
			return one(reply)
		}
		profiles[name] = merged
		return one(reply)
	})
}
