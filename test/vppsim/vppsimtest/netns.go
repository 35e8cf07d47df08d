package vppsimtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// sweptPrefixes are the prefixes whose dead runs this process has swept.
var sweptPrefixes sync.Map

// Netns is a named network namespace created for one test.
type Netns struct {
	Name string
}

// Path is the namespace's bind-mount path, what VPP accepts as a host namespace too.
func (n *Netns) Path() string { return filepath.Join("/var/run/netns", n.Name) }

// NewNetns creates a namespace named prefix-<pid>-<random>, with lo up, and deletes it when the
// test ends, pass or fail. A test binary that was killed cannot delete its namespaces: the first
// NewNetns of a prefix in a process deletes those of the prefix whose process is gone.
func NewNetns(t testing.TB, prefix string) *Netns {
	t.Helper()
	if _, swept := sweptPrefixes.LoadOrStore(prefix, true); !swept {
		if err := topology.SweepStale(prefix); err != nil {
			t.Fatalf("deleting the namespaces of dead runs of %s: %v", prefix, err)
		}
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	n := &Netns{Name: topology.RunPrefix(prefix) + hex.EncodeToString(suffix)}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", n.Name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.Name, err, out)
		}
	})
	if err := n.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		t.Fatalf("bringing lo up in %s: %v", n.Name, err)
	}
	return n
}

// Do runs fn on an OS thread inside the namespace. The thread is thrown away afterwards,
// so nothing else ever runs in a namespace it did not ask for.
func (n *Netns) Do(fn func() error) error {
	errCh := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		handle, err := netns.GetFromName(n.Name)
		if err != nil {
			errCh <- fmt.Errorf("opening netns %s: %w", n.Name, err)
			return
		}
		defer func() { _ = handle.Close() }()
		if err := netns.Set(handle); err != nil {
			errCh <- fmt.Errorf("entering netns %s: %w", n.Name, err)
			return
		}
		errCh <- fn()
	}()
	return <-errCh
}

// MustDo is Do that fails the test on error.
func (n *Netns) MustDo(t testing.TB, fn func() error) {
	t.Helper()
	if err := n.Do(fn); err != nil {
		t.Fatal(err)
	}
}

// AddrAdd configures cidr on link name inside the namespace (IPv6 without duplicate
// address detection) and brings the link up.
func (n *Netns) AddrAdd(t testing.TB, name, cidr string) {
	t.Helper()
	n.MustDo(t, func() error {
		link, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		addr, err := netlink.ParseAddr(cidr)
		if err != nil {
			return err
		}
		if addr.IP.To4() == nil {
			// Usable at once: duplicate address detection would hold it back for a second.
			addr.Flags |= unix.IFA_F_NODAD
		}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("adding %s to %s in %s: %w", cidr, name, n.Name, err)
		}
		return netlink.LinkSetUp(link)
	})
}

// Veth creates a veth pair with one end in each namespace, addresses them (either address
// may be empty) and brings both ends up.
func Veth(t testing.TB, a *Netns, aName, aCIDR string, b *Netns, bName, bCIDR string) {
	t.Helper()
	a.MustDo(t, func() error {
		peerNs, err := netns.GetFromName(b.Name)
		if err != nil {
			return err
		}
		defer func() { _ = peerNs.Close() }()
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: aName}, PeerName: bName, PeerNamespace: netlink.NsFd(int(peerNs))}
		return netlink.LinkAdd(veth)
	})
	for _, end := range []struct {
		ns         *Netns
		name, cidr string
	}{{a, aName, aCIDR}, {b, bName, bCIDR}} {
		if end.cidr != "" {
			end.ns.AddrAdd(t, end.name, end.cidr)
			continue
		}
		end.ns.MustDo(t, func() error {
			link, err := netlink.LinkByName(end.name)
			if err != nil {
				return err
			}
			return netlink.LinkSetUp(link)
		})
	}
}
