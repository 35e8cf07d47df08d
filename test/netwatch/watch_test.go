package netwatch_test

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/test/netwatch"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

func TestWatchSeesEveryWriteAndNothingElse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	ns := vppsimtest.NewNetns(t, "nwt")
	w, err := netwatch.Start(ns.Path())
	require.NoError(t, err)
	events, err := w.Settle()
	require.NoError(t, err)
	require.Empty(t, events, "nothing happened yet")

	ns.MustDo(t, func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nsm-1"}, PeerName: "nsm-1p"}); err != nil {
			return err
		}
		link, err := netlink.LinkByName("nsm-1")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return err
		}
		address, _ := netlink.ParseAddr("172.16.0.1/32")
		if err := netlink.AddrAdd(link, address); err != nil {
			return err
		}
		_, dst, _ := net.ParseCIDR("10.0.0.0/8")
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Table: 300}); err != nil {
			return err
		}
		rule := netlink.NewRule()
		rule.Table, rule.Priority = 300, 20000
		if err := netlink.RuleAdd(rule); err != nil {
			return err
		}
		return netlink.LinkDel(link)
	})
	events, err = w.Stop()
	require.NoError(t, err)
	require.Equal(t, []string{"link nsm-1 added", "link nsm-1 deleted"}, names(netwatch.LinkChanges(events, "nsm-1")))
	writes := netwatch.Writes(events)
	require.Contains(t, whats(writes), "address")
	require.Contains(t, whats(writes), "route")
	require.Contains(t, whats(writes), "rule")
	for _, e := range writes {
		if e.What == "rule" {
			require.Equal(t, 300, e.Table)
		}
	}
}

func names(events []netwatch.Event) []string {
	var out []string
	for _, e := range events {
		verb := "added"
		if e.Deleted {
			verb = "deleted"
		}
		out = append(out, "link "+e.Name+" "+verb)
	}
	return out
}

func whats(events []netwatch.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.What)
	}
	return out
}
