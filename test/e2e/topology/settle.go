package topology

import (
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// WaitAddressesSettled waits until no address of the named namespace is tentative: the kernel
// finishes IPv6 duplicate address detection on its own a second or two after a link comes up, and
// reports it as an address (and local route) change that nobody wrote.
func WaitAddressesSettled(netnsName string, timeout time.Duration) error {
	ns, err := netns.GetFromName(netnsName)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", netnsName, err)
	}
	defer func() { _ = ns.Close() }()
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", netnsName, err)
	}
	defer handle.Close()
	deadline := time.Now().Add(timeout)
	for {
		addrs, err := handle.AddrList(nil, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		tentative := 0
		for _, a := range addrs {
			if a.Flags&unix.IFA_F_TENTATIVE != 0 {
				tentative++
			}
		}
		if tentative == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d addresses still tentative after %s", netnsName, tentative, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
