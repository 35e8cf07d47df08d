package linkroutes

import "github.com/vishvananda/netlink"

// DefaultProtocol marks the routes this element installs; 0xfd is not assigned in
// /etc/iproute2/rt_protos and not used by the kernel or the common routing daemons.
const DefaultProtocol netlink.RouteProtocol = 0xfd

type options struct {
	protocol netlink.RouteProtocol
}

// Option configures the element.
type Option func(*options)

// WithProtocol sets the rtnetlink protocol value that marks this forwarder's routes.
func WithProtocol(protocol netlink.RouteProtocol) Option {
	return func(o *options) { o.protocol = protocol }
}
