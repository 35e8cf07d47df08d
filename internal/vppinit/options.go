package vppinit

import "github.com/vishvananda/netlink"

type options struct {
	handle *netlink.Handle
	params Params
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
