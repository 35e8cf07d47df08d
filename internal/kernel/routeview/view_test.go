package routeview

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

const testMark = 250

// testNamespace is a namespace with two veth links, lna and lnb (their peers stay in it too).
type testNamespace struct {
	*vppsimtest.Netns
	url string
}

func newTestNamespace(t *testing.T) *testNamespace {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	n := &testNamespace{Netns: vppsimtest.NewNetns(t, "rvw")}
	n.url = "file://" + n.Path()
	for _, link := range []string{"lna", "lnb"} {
		n.ip(t, "link", "add", link, "type", "veth", "peer", "name", link+"p")
		n.ip(t, "link", "set", link+"p", "up")
		n.ip(t, "link", "set", link, "up")
	}
	return n
}

// ip runs an iproute2 command in the namespace: changes made by another process, as the view sees them.
func (n *testNamespace) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// contents renders what a view holds, sorted, for comparing two views.
func contents(v *View) []string {
	var out []string
	for table, rules := range v.s.rules {
		for _, r := range rules {
			out = append(out, fmt.Sprintf("table %d %+v", table, r))
		}
	}
	for slot, routes := range v.s.routes {
		for _, r := range routes {
			out = append(out, fmt.Sprintf("%+v %+v", slot, r))
		}
	}
	for table := range v.s.emptyRuled {
		out = append(out, fmt.Sprintf("empty ruled %d", table))
	}
	sort.Strings(out)
	return out
}

// withView runs use on the namespace's view, and lets go of the view however use ends.
func withView(t *testing.T, registry *Registry, n *testNamespace, use func(v *View)) {
	t.Helper()
	view, done, err := registry.Open(n.url)
	require.NoError(t, err)
	defer done()
	use(view)
}

// requireInStep checks that the view registry keeps equals a view freshly built from the kernel, and that
// every link it knows is what the kernel says of it.
func requireInStep(t *testing.T, registry *Registry, n *testNamespace, step string) {
	t.Helper()
	var kept []string
	withView(t, registry, n, func(v *View) {
		kept = contents(v)
		for name, l := range v.s.links {
			actual, err := v.request.link(name)
			require.NoError(t, err, "after %s the view still knows link %s", step, name)
			require.Equal(t, actual.index, l.index, "after %s", step)
			require.Equal(t, actual.flags&unix.IFF_UP, l.flags&unix.IFF_UP, "after %s link %s", step, name)
		}
	})
	fresh := NewRegistry(testMark)
	defer fresh.Close()
	withView(t, fresh, n, func(v *View) { require.Equal(t, contents(v), kept, "after %s", step) })
}

// The view follows every change another process makes, including the routes the kernel drops without a
// notification: when a link goes down or away, when its last IPv4 address goes, when a preferred source goes.
func TestViewStaysInStepWithTheKernel(t *testing.T) {
	n := newTestNamespace(t)
	registry := NewRegistry(testMark)
	defer registry.Close()
	n.ip(t, "addr", "add", "172.16.0.1/24", "dev", "lna")
	n.ip(t, "-6", "addr", "add", "fd00::1/64", "dev", "lna", "nodad")
	n.ip(t, "addr", "add", "172.16.0.2/32", "dev", "lna")
	n.ip(t, "addr", "add", "172.17.0.1/32", "dev", "lnb")
	withView(t, registry, n, func(v *View) {
		for _, name := range []string{"lna", "lnb"} {
			_, _, err := v.Link(name)
			require.NoError(t, err)
		}
	})
	requireInStep(t, registry, n, "opening")

	steps := []struct {
		name string
		args [][]string
	}{
		{"marked routes in tables and main", [][]string{
			{"route", "add", "10.1.0.0/16", "dev", "lna", "table", "1000", "proto", "250", "metric", "1000"},
			{"route", "add", "10.2.0.0/16", "via", "172.16.0.254", "dev", "lna", "onlink", "table", "1001", "proto", "250"},
			{"-6", "route", "add", "fd01::/64", "dev", "lna", "table", "1000", "proto", "250"},
			{"route", "add", "10.3.0.0/16", "dev", "lnb", "proto", "250"},
			{"route", "add", "10.4.0.0/16", "dev", "lnb", "src", "172.16.0.2"},
		}},
		{"rules", [][]string{
			{"rule", "add", "from", "172.16.0.1", "table", "1000", "priority", "20000", "proto", "250"},
			{"rule", "add", "from", "172.16.0.1", "ipproto", "tcp", "dport", "443", "table", "1001", "priority", "20001", "proto", "250"},
			{"-6", "rule", "add", "from", "fd00::1", "table", "1000", "priority", "20000", "proto", "250"},
			{"rule", "add", "fwmark", "7", "table", "1002", "priority", "20002"},
			{"rule", "add", "from", "172.16.0.9", "table", "1003", "priority", "20003", "proto", "250"},
		}},
		{"replaces and deletes", [][]string{
			{"route", "replace", "10.1.0.0/16", "via", "172.16.0.253", "dev", "lna", "onlink", "table", "1000", "proto", "250", "metric", "1000"},
			{"route", "del", "10.2.0.0/16", "table", "1001"},
			{"rule", "del", "fwmark", "7", "table", "1002", "priority", "20002"},
		}},
		{"link b down", [][]string{{"link", "set", "lnb", "down"}}},
		{"link b up again with a route", [][]string{{"link", "set", "lnb", "up"}, {"route", "add", "10.5.0.0/16", "dev", "lnb", "proto", "250"}}},
		{"a preferred source on another link removed", [][]string{{"addr", "del", "172.16.0.2/32", "dev", "lna"}}},
		{"a's last IPv4 address removed", [][]string{{"addr", "del", "172.16.0.1/24", "dev", "lna"}}},
		{"link a deleted", [][]string{{"link", "del", "lna"}}},
	}
	for _, step := range steps {
		for _, args := range step.args {
			n.ip(t, args...)
		}
		requireInStep(t, registry, n, step.name)
	}
}

// A view that is in step does not read the kernel again: a sync without notifications costs no dump.
func TestSyncWithoutChangesMakesNoDump(t *testing.T) {
	n := newTestNamespace(t)
	registry := NewRegistry(testMark)
	defer registry.Close()
	var built int
	withView(t, registry, n, func(v *View) { built = v.dumps })

	n.ip(t, "route", "add", "10.1.0.0/16", "dev", "lna", "table", "1000", "proto", "250")
	withView(t, registry, n, func(v *View) {
		require.Equal(t, built, v.dumps, "a route added is a notification, not a reason to dump")
		require.Equal(t, 1, v.RouteCount(1000))
	})
}

// When notifications overrun the subscription, the view rebuilds itself from dumps and is right again.
func TestOverrunRebuildsTheView(t *testing.T) {
	n := newTestNamespace(t)
	registry := NewRegistry(testMark)
	defer registry.Close()
	withView(t, registry, n, func(v *View) {
		require.NoError(t, unix.SetsockoptInt(v.monitor, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4096))
	})

	var batch strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&batch, "route add 10.%d.%d.0/24 dev lna table 1000 proto 250\n", i/256, i%256)
	}
	cmd := exec.Command("ip", "-n", n.Name, "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	withView(t, registry, n, func(v *View) { require.Equal(t, 2000, v.RouteCount(1000)) })
	requireInStep(t, registry, n, "an overrun")
}

// A failure in the middle of a batch is reported with the write that caused it, the writes around it are
// applied, and deleting something gone is no failure.
func TestBatchReportsTheFailingWrite(t *testing.T) {
	n := newTestNamespace(t)
	registry := NewRegistry(testMark)
	defer registry.Close()
	withView(t, registry, n, func(view *View) {
		requireBatchReportsTheFailingWrite(t, view)
	})
}

func requireBatchReportsTheFailingWrite(t *testing.T, view *View) {
	link, _, err := view.Link("lna")
	require.NoError(t, err)

	good := func(dst string) *Route {
		return &Route{Family: unix.AF_INET, Table: 1000, Dst: netip.MustParsePrefix(dst), Oif: link, Protocol: testMark, Type: unix.RTN_UNICAST}
	}
	broken := good("10.2.0.0/16")
	broken.Oif = 999999
	ops := make([]Op, 0, 2*batchSize)
	for i := range batchSize {
		ops = append(ops, good(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24).String()).AddOp())
	}
	ops = append(ops, broken.AddOp(), good("10.3.0.0/16").AddOp(), good("10.4.0.0/16").DeleteOp())

	err = view.Write(ops)
	require.ErrorIs(t, err, unix.ENODEV)
	require.Contains(t, err.Error(), "10.2.0.0/16")
	require.Equal(t, batchSize+1, view.RouteCount(1000), "the view saw the writes that succeeded")
}

// A view nobody holds closes after the linger time; one that is held stays open.
func TestViewsCloseWhenNobodyHoldsThem(t *testing.T) {
	n := newTestNamespace(t)
	registry := NewRegistry(testMark, WithLinger(10*time.Millisecond))
	defer registry.Close()
	withView(t, registry, n, func(v *View) { registry.Hold("conn-1", v) })
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, 1, registry.Views(), "a held view stays open")

	registry.Release("conn-1")
	require.Eventually(t, func() bool { return registry.Views() == 0 }, time.Second, 10*time.Millisecond)

	withView(t, registry, n, func(v *View) { require.Empty(t, v.s.links, "a closed view opens anew") })
}
