package domain

import (
	"fmt"
	"os"
	"path/filepath"
)

// Forwarder is the forwarder program a domain runs on every node, and how the harness knows it
// serves and steers it: this project's forwarder-vpp, the stock-equivalent
// test/stockforwarder, or any binary configured by the stock NSM_* variables.
type Forwarder struct {
	// Name is what reports call it.
	Name   string
	Binary string
	// ReadyLine is what a run logs once it serves and has registered. A restart waits for it in
	// the new run's output: the dead run's registration and socket prove nothing.
	ReadyLine string
	// KernelInterfaceVariable says the forwarder reads NSM_KERNEL_INTERFACE_TYPE. A forwarder
	// without it chooses as the stock one does, tap when /dev/vhost-net exists and veth
	// otherwise; the harness then makes the choice by what /dev shows in the forwarder's own
	// mount namespace (see vhostNetView).
	KernelInterfaceVariable bool
	// Ours is this project's forwarder: the scenarios' design checks (the protocol mark on
	// rules and routes, identical rules across a restart, unregistering on SIGTERM) apply to
	// it alone; the user-visible outcome checks apply to every forwarder.
	Ours bool
}

// ForwarderVPP is this project's forwarder.
func (b *Binaries) ForwarderVPP() Forwarder {
	return Forwarder{Name: "forwarder-vpp", Binary: b.Forwarder, ReadyLine: "forwarder-vpp is ready", KernelInterfaceVariable: true, Ours: true}
}

// Stock is the stock-equivalent forwarder (test/stockforwarder), which logs what the stock
// cmd-forwarder-vpp logs once registered.
func (b *Binaries) Stock() Forwarder {
	return Forwarder{Name: "stock", Binary: b.StockForwarder, ReadyLine: "Startup completed in"}
}

// ForwarderByName picks "forwarder-vpp" (or "" for it) or "stock".
func (b *Binaries) ForwarderByName(name string) (Forwarder, error) {
	switch name {
	case "", "forwarder-vpp", "ours":
		return b.ForwarderVPP(), nil
	case "stock":
		return b.Stock(), nil
	}
	return Forwarder{}, fmt.Errorf("unknown forwarder %q: forwarder-vpp or stock", name)
}

// vhostNetView wraps argv so that the forwarder runs in a mount namespace of its own whose
// /dev is the node's /dev, seen through symbolic links, with /dev/vhost-net present when tap
// is wanted and absent when veth is: the stock kernel mechanism decides by os.Stat on that
// path alone. The view lives in dir; the mount namespace ends with the forwarder. (The
// simulator creates taps itself, so it needs no vhost-net device.)
func vhostNetView(dir, kernelType string, argv []string) ([]string, error) {
	if kernelType != "tap" && kernelType != "veth" {
		return argv, nil
	}
	realDev := filepath.Join(dir, "dev.real")
	view := filepath.Join(dir, "dev."+kernelType)
	if err := os.MkdirAll(realDev, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(view, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/dev")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Name() == "vhost-net" {
			continue
		}
		link := filepath.Join(view, e.Name())
		if _, statErr := os.Lstat(link); statErr == nil {
			continue
		}
		if err = os.Symlink(filepath.Join(realDev, e.Name()), link); err != nil {
			return nil, err
		}
	}
	if kernelType == "tap" {
		if err = os.WriteFile(filepath.Join(view, "vhost-net"), nil, 0o644); err != nil {
			return nil, err
		}
	}
	// unshare and sh exec in place, so the forwarder keeps its pid and its binary's path (SPIRE's
	// path selector).
	script := `mount --rbind /dev "$1" && mount --bind "$2" /dev && shift 2 && exec "$@"`
	return append([]string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "vhost-net-view", realDev, view}, argv...), nil
}
