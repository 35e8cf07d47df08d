package vppinit

import "github.com/vishvananda/netlink"

type options struct {
	handle      *netlink.Handle
	params      Params
	vlanDevices []string
	bpffs       string
}

// Option configures Run.
type Option func(*options)

// WithNetlinkHandle reads the uplink through handle instead of the current network namespace.
func WithNetlinkHandle(handle *netlink.Handle) Option {
	return func(o *options) { o.handle = handle }
}

// WithParams sets the uplink creation parameters (default DefaultParams()).
func WithParams(params Params) Option {
	return func(o *options) { o.params = params }
}

// WithVlanDevices names the host devices the vlan mechanism uses (the values of the device
// selector file); Run makes them usable by VPP after the uplink.
func WithVlanDevices(devices ...string) Option {
	return func(o *options) { o.vlanDevices = devices }
}

// WithBPFFS names the BPF filesystem where VPP's loader pins the XDP program's maps (default
// /sys/fs/bpf, where libbpf pins them); AF_XDP mounts one there when there is none.
func WithBPFFS(dir string) Option {
	return func(o *options) { o.bpffs = dir }
}
