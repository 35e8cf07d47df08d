// Command e2e-vlanhost is a host on one VLAN of a trunk, for kernels without 802.1Q support
// (no vlan links, no bridge VLAN filtering, no tc vlan action), where `ip link add link eth0
// name eth0.100 type vlan id 100` fails. It does in user space what that VLAN link would: a tap
// named like it carries the host's address, every frame the host sends through it leaves the
// trunk interface tagged with the VLAN, and every frame the trunk interface receives tagged with
// the VLAN reaches the tap untagged; frames of other VLANs, and untagged ones, are dropped. Run
// it in the host's namespace; it prints "ready" once both ends are up, and removes the tap on
// SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/vishvananda/netlink"
)

func main() {
	trunk := flag.String("trunk", "eth0", "the host's interface on the trunk")
	vlan := flag.Int("vlan", 0, "the VLAN ID, 1 to 4094")
	name := flag.String("name", "", "the VLAN interface's name (default <trunk>.<vlan>)")
	addr := flag.String("addr", "", "the VLAN interface's address, as a prefix")
	flag.Parse()
	if err := run(*trunk, *vlan, *name, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-vlanhost:", err)
		os.Exit(1)
	}
}

func run(trunkName string, vlanID int, name, addrText string) error {
	if vlanID < 1 || vlanID > 4094 {
		return fmt.Errorf("-vlan %d: a VLAN ID is 1 to 4094", vlanID)
	}
	prefix, err := netip.ParsePrefix(addrText)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	if name == "" {
		name = fmt.Sprintf("%s.%d", trunkName, vlanID)
	}
	trunk, err := net.InterfaceByName(trunkName)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()

	wire, err := openTrunk(trunk.Index)
	if err != nil {
		return fmt.Errorf("packet socket on %s: %w", trunkName, err)
	}
	defer func() { _ = wire.close() }()
	tap, link, err := openTap(name, trunk.MTU, prefix)
	if err != nil {
		return err
	}
	defer func() { _ = netlink.LinkDel(link) }()
	defer func() { _ = tap.Close() }()

	errs := make(chan error, 2)
	go func() { errs <- wire.toTap(tap, uint16(vlanID)) }()
	go func() { errs <- wire.fromTap(tap, uint16(vlanID)) }()
	fmt.Printf("ready: %s on VLAN %d of %s, %s\n", name, vlanID, trunkName, prefix)
	select {
	case <-ctx.Done():
		return nil
	case err = <-errs:
		return err
	}
}

// openTap creates the tap the host's VLAN traffic goes through, with the trunk's MTU and addr,
// and brings it up.
func openTap(name string, mtu int, addr netip.Prefix) (*os.File, netlink.Link, error) {
	tap := &netlink.Tuntap{
		LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu},
		Mode:      netlink.TUNTAP_MODE_TAP,
		Flags:     netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE,
		Queues:    1,
	}
	if err := netlink.LinkAdd(tap); err != nil {
		return nil, nil, fmt.Errorf("tap %s: %w", name, err)
	}
	if len(tap.Fds) != 1 {
		_ = netlink.LinkDel(tap)
		return nil, nil, fmt.Errorf("tap %s: %d queues opened, want 1", name, len(tap.Fds))
	}
	nlAddr, err := netlink.ParseAddr(addr.String())
	if err == nil {
		err = netlink.AddrAdd(tap, nlAddr)
	}
	if err == nil {
		err = netlink.LinkSetUp(tap)
	}
	if err != nil {
		_ = tap.Fds[0].Close()
		_ = netlink.LinkDel(tap)
		return nil, nil, fmt.Errorf("tap %s: %w", name, err)
	}
	return tap.Fds[0], tap, nil
}
