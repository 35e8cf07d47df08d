package linkroutes

import (
	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// Option configures an element.
type Option func(*linkRoutes)

// WithRegistry makes the element share its namespace views with other elements (see routeview); by default
// it has a registry of its own. The registry's mark is the one the element's routes carry.
func WithRegistry(registry *routeview.Registry) Option {
	return func(l *linkRoutes) { l.registry = registry }
}

func newLinkRoutes(isClient bool, holderPrefix string, opts []Option) *linkRoutes {
	l := &linkRoutes{isClient: isClient, holderPrefix: holderPrefix}
	for _, opt := range opts {
		opt(l)
	}
	if l.registry == nil {
		l.registry = routeview.NewRegistry(routeview.ForwarderProtocol)
	}
	return l
}
