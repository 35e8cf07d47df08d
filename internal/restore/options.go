package restore

import "github.com/vishvananda/netlink"

type options struct {
	forwarderNetns *netlink.Handle
}

// Option configures a Releaser.
type Option func(*options)

// WithForwarderNetns makes the releaser look for veth ends through handle instead of in the
// namespace of the calling thread, which is the forwarder's own in production.
func WithForwarderNetns(handle *netlink.Handle) Option {
	return func(o *options) { o.forwarderNetns = handle }
}
