package journal

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
)

// FuzzDecodeRecord feeds record files of any content and name to the decoder Open uses. A record
// it accepts is one the journal would write, in the file it would write it to, and survives a
// write and a read unchanged.
func FuzzDecodeRecord(f *testing.F) {
	mechanism := kernel.New("inode://4/4026532000")
	kernel.ToMechanism(mechanism).SetInterfaceName("nsm-1")
	incoming := strip(&networkservice.Connection{
		Id:        "conn-1",
		Mechanism: mechanism,
		Path:      &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{{Id: "nsc-1", Name: "nsc"}, {Id: "conn-1", Name: "forwarder"}}},
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: []string{"172.16.0.2/32"},
			Policies:   []*networkservice.PolicyRoute{{From: "172.16.0.2/32", Routes: []*networkservice.Route{{Prefix: "10.0.0.0/8", NextHop: "172.16.0.1"}}}},
		}},
	})
	valid := &Record{
		ID:         "conn-1",
		Committed:  &State{Incoming: incoming, Outgoing: strip(&networkservice.Connection{Id: "nsmgr-conn-1"}), Interfaces: []Interface{{Tag: "conn-1", SwIfIndex: 3}}},
		Namespaces: map[string]netnsid.Identity{},
	}
	data, err := encode(valid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fileName("conn-1"), data)
	f.Add(fileName("conn-9"), data)
	f.Add(fileName("conn-9"), []byte(`{"id": "conn-9"}`))
	f.Add(fileName(""), []byte(`{}`))
	f.Add("garbage.json", []byte(`{"version": 2, "id": "conn-`))

	f.Fuzz(func(t *testing.T, name string, data []byte) {
		rec, err := decodeRecord(name, data)
		if err != nil {
			return
		}
		if name != fileName(rec.ID) {
			t.Fatalf("accepted connection %q from file %q", rec.ID, name)
		}
		for _, s := range rec.States() {
			for _, conn := range []*networkservice.Connection{s.Incoming, s.Outgoing} {
				if conn != nil && !proto.Equal(strip(conn), conn) {
					t.Fatalf("accepted more than a record: %v", conn)
				}
			}
		}
		rewritten, err := encode(rec)
		if err != nil {
			t.Fatalf("an accepted record does not encode: %v", err)
		}
		again, err := decodeRecord(name, rewritten)
		if err != nil {
			t.Fatalf("an accepted record does not survive a write and a read: %v", err)
		}
		reencoded, err := encode(again)
		if err != nil || string(reencoded) != string(rewritten) {
			t.Fatalf("an accepted record changes across a write and a read: %s, then %s (%v)", rewritten, reencoded, err)
		}
	})
}
