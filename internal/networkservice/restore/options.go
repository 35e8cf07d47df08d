package restore

import "github.com/vishvananda/netlink"

type options struct {
	forwarderNetns *netlink.Handle
	vppEnded       func() bool
}

// Option configures a Releaser.
type Option func(*options)

// WithForwarderNetns makes the releaser look for veth ends through handle instead of in the
// namespace of the calling thread, which is the forwarder's own in production.
func WithForwarderNetns(handle *netlink.Handle) Option {
	return func(o *options) { o.forwarderNetns = handle }
}

// WithVPPEnded tells the releaser when the VPP it releases through has ended: a VPP the forwarder
// started itself takes every interface with it when its process ends, so a release then has
// nothing left to do in VPP and releases the kernel state and veth ends alone. Without it (an
// external VPP) a VPP that does not answer fails the release, which is retried.
func WithVPPEnded(ended func() bool) Option {
	return func(o *options) { o.vppEnded = ended }
}
