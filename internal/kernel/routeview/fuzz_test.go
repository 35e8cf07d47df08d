package routeview

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// rtextFilterSkipStats asks link dumps to leave out statistics (RTEXT_FILTER_SKIP_STATS).
const rtextFilterSkipStats = 1 << 3

// The seed corpora under testdata/fuzz are rules, routes, links and addresses as this kernel sends them,
// written by TestWriteFuzzSeeds; go test runs them as regular tests, go test -fuzz grows from them.

func seedRules() []Rule {
	return []Rule{
		{Family: unix.AF_INET, Sel: Selector{Src: netip.MustParsePrefix("172.16.0.1/32")}, Table: 0x10000001, Priority: 29999, Protocol: testMark, Plain: true},
		{Family: unix.AF_INET6, Sel: Selector{Src: netip.MustParsePrefix("fd00::/64"), Proto: 17, Sport: PortRange{53, 53}, Dport: PortRange{1000, 2000}},
			Table: 1000, Priority: 20000, Protocol: testMark, Plain: true},
		{Family: unix.AF_INET, Sel: Selector{Proto: 6}, Table: 200, Priority: 1, Protocol: 4, Plain: true},
	}
}

func seedRoutes() []Route {
	return []Route{
		{Family: unix.AF_INET, Table: 0x10000001, Dst: netip.MustParsePrefix("10.1.0.0/16"), Gw: netip.MustParseAddr("172.16.0.2"), Onlink: true,
			Oif: 3, Priority: 0x10000001, Protocol: testMark, Type: unix.RTN_UNICAST, Plain: true},
		{Family: unix.AF_INET6, Table: MainTable, Dst: netip.MustParsePrefix("::/0"), Oif: 7, Protocol: testMark, Type: unix.RTN_UNICAST, Plain: true},
		{Family: unix.AF_INET, Table: MainTable, Dst: netip.MustParsePrefix("172.16.0.1/32"), Oif: 2, Protocol: testMark, Scope: unix.RT_SCOPE_LINK, Type: unix.RTN_UNICAST, Plain: true},
	}
}

// FuzzParseRule checks that any rule payload decodes without panicking, and that every plain rule survives
// being written back and decoded again: a plain rule is exactly what the forwarder would write for it.
func FuzzParseRule(f *testing.F) {
	for _, r := range seedRules() {
		f.Add(r.serialize())
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		rule, ok := parseRule(payload)
		if !ok || !rule.Plain || !validRuleForWriting(&rule) {
			return
		}
		again, ok := parseRule(rule.serialize())
		require.True(t, ok)
		require.Equal(t, rule, again)
	})
}

// validRuleForWriting is what the forwarder ever writes: a source of the rule's own family.
func validRuleForWriting(r *Rule) bool {
	return (r.Family == unix.AF_INET || r.Family == unix.AF_INET6) &&
		(!r.Sel.Src.IsValid() || FamilyOf(r.Sel.Src.Addr()) == r.Family && r.Sel.Src.Addr().BitLen() == familyBits(r.Family))
}

func familyBits(family uint8) int {
	if family == unix.AF_INET {
		return 32
	}
	return 128
}

// FuzzParseRoute checks that any route payload decodes without panicking, and that every plain route
// survives being written back and decoded again.
func FuzzParseRoute(f *testing.F) {
	for _, r := range seedRoutes() {
		f.Add(r.serialize(r.Scope, r.Type))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		route, ok := parseRoute(payload)
		if !ok || !route.Plain || route.Tos != 0 || route.Type != unix.RTN_UNICAST || route.Dst.Addr().BitLen() != familyBits(route.Family) {
			return
		}
		again, ok := parseRoute(route.serialize(route.Scope, route.Type))
		require.True(t, ok)
		require.Equal(t, route, again)
	})
}

// FuzzApply feeds a stream of notifications to a view and checks that its indexes still describe its
// contents exactly, whatever the stream: rules and routes that come and go, replaces, links and
// addresses, malformed messages.
func FuzzApply(f *testing.F) {
	var stream []byte
	for _, r := range seedRules() {
		stream = appendMessage(stream, unix.RTM_NEWRULE, 0, 0, r.serialize())
	}
	for _, r := range seedRoutes() {
		stream = appendMessage(stream, unix.RTM_NEWROUTE, 0, 0, r.serialize(r.Scope, r.Type))
	}
	f.Add(stream)
	for _, r := range seedRoutes() {
		stream = appendMessage(stream, unix.RTM_DELROUTE, 0, 0, r.serialize(r.Scope, r.Type))
	}
	f.Add(stream)
	f.Fuzz(func(t *testing.T, stream []byte) {
		v := newView("fuzz", -1, -1, testMark)
		v.stale = false
		// The lowest priority is kept up to date as rules come and go once it has been asked for.
		v.LowestPriority(unix.AF_INET, 1, 30000)
		v.LowestPriority(unix.AF_INET6, 20000, 29999)
		splitMessages(stream, v.apply)
		requireIndexesTrue(t, v.s)
	})
}

// requireIndexesTrue recomputes every index of s from its rules and routes and compares.
func requireIndexesTrue(t *testing.T, s *state) {
	t.Helper()
	want := newState(s.mark)
	for table, rules := range s.rules {
		require.NotEmpty(t, rules, "a table without rules is deleted")
		for i := range rules {
			require.Equal(t, table, rules[i].Table, "rules filed under their table")
			want.addRule(&rules[i])
		}
	}
	for slot, routes := range s.routes {
		require.NotEmpty(t, routes, "an empty slot is deleted")
		for i := range routes {
			require.Equal(t, slot, routes[i].Slot(), "routes filed under their slot")
			want.addRoute(&routes[i])
		}
	}
	require.Equal(t, want.byTable, s.byTable)
	require.Equal(t, want.byOif, s.byOif)
	require.Equal(t, want.byPrefsrc, s.byPrefsrc)
	require.Equal(t, want.priorities, s.priorities)
	require.Equal(t, want.emptyRuled, s.emptyRuled)
	require.Len(t, s.linkNames, len(s.links), "one name per link index")
	for name, l := range s.links {
		require.Equal(t, name, s.linkNames[l.index])
		require.Equal(t, name, l.name)
	}
	for f, c := range s.lowest {
		if c.valid {
			var lowest uint32
			found := false
			for p := range want.priorities[f] {
				if p >= c.first && p <= c.last && (!found || p < lowest) {
					lowest, found = p, true
				}
			}
			require.Equal(t, found, c.found, "family %d has a priority in [%d, %d]", f, c.first, c.last)
			if found {
				require.Equal(t, lowest, c.value)
			}
		}
	}
}

// TestWriteFuzzSeeds records real kernel messages as seed corpora; run it with ROUTEVIEW_WRITE_SEEDS=1 after
// changing what the tests' namespaces hold.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("ROUTEVIEW_WRITE_SEEDS") == "" {
		t.Skip("set ROUTEVIEW_WRITE_SEEDS=1 to rewrite testdata/fuzz from this kernel's messages")
	}
	n := newTestNamespace(t)
	for _, args := range [][]string{
		{"addr", "add", "172.16.0.1/24", "dev", "lna"},
		{"-6", "addr", "add", "fd00::1/64", "dev", "lna", "nodad"},
		{"route", "add", "10.1.0.0/16", "via", "172.16.0.254", "dev", "lna", "onlink", "table", "268435457", "proto", "250", "metric", "268435457"},
		{"-6", "route", "add", "fd01::/64", "via", "fd00::fe", "dev", "lna", "table", "1000", "proto", "250"},
		{"route", "add", "10.2.0.0/16", "dev", "lnb", "src", "172.16.0.1", "mtu", "1400"},
		{"route", "add", "10.3.0.0/16", "nexthop", "dev", "lna", "nexthop", "dev", "lnb"},
		{"route", "add", "blackhole", "10.4.0.0/16", "table", "1001"},
		{"rule", "add", "from", "172.16.0.1", "ipproto", "tcp", "dport", "8000-8080", "table", "268435457", "priority", "29999", "proto", "250"},
		{"-6", "rule", "add", "from", "fd00::1", "sport", "53", "table", "1000", "priority", "20000", "proto", "250"},
		{"rule", "add", "fwmark", "7", "iif", "lna", "table", "1002", "priority", "100"},
	} {
		n.ip(t, args...)
	}
	registry := NewRegistry(testMark)
	defer registry.Close()
	view, done, err := registry.Open(n.url)
	require.NoError(t, err)
	defer done()

	var stream []byte
	record := func(target string, index int, payload []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", string(payload))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("kernel-%02d", index)), []byte(body), 0o644))
	}
	index := 0
	require.NoError(t, view.request.dump(unix.RTM_GETRULE, make([]byte, sizeofFibRuleHdr), func(msgType uint16, payload []byte) {
		record("FuzzParseRule", index, payload)
		stream = appendMessage(stream, msgType, 0, 0, payload)
		index++
	}))
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		request := make([]byte, unix.SizeofRtMsg)
		request[0] = family
		require.NoError(t, view.request.dump(unix.RTM_GETROUTE, request, func(msgType uint16, payload []byte) {
			record("FuzzParseRoute", index, payload)
			stream = appendMessage(stream, msgType, 0, 0, payload)
			if index%4 == 0 {
				delStream := appendMessage(nil, unix.RTM_DELROUTE, 0, 0, payload)
				record("FuzzApply", index, append(append([]byte(nil), stream...), delStream...))
			}
			index++
		}))
	}
	linkDump := appendUint32Attr(make([]byte, unix.SizeofIfInfomsg), unix.IFLA_EXT_MASK, rtextFilterSkipStats)
	require.NoError(t, view.request.dump(unix.RTM_GETLINK, linkDump, func(msgType uint16, payload []byte) {
		down := append([]byte(nil), payload...)
		binary.NativeEndian.PutUint32(down[8:12], 0)
		record("FuzzApply", index, appendMessage(append([]byte(nil), stream...), msgType, 0, 0, down))
		index++
	}))
}
