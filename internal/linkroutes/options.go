package linkroutes

import (
	"github.com/vishvananda/netlink"

	"github.com/nsmfwd/forwarder-vpp/internal/kernelmark"
)

// DefaultProtocol marks the routes this element installs, the same mark policy routes carry.
const DefaultProtocol netlink.RouteProtocol = kernelmark.Protocol

type options struct {
	protocol netlink.RouteProtocol
}

// Option configures the element.
type Option func(*options)

// WithProtocol sets the rtnetlink protocol value that marks this forwarder's routes.
func WithProtocol(protocol netlink.RouteProtocol) Option {
	return func(o *options) { o.protocol = protocol }
}
