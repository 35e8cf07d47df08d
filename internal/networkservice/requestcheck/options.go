package requestcheck

type options struct {
	limits Limits
}

// Option configures the element.
type Option func(*options)

// WithLimits replaces DefaultLimits.
func WithLimits(limits Limits) Option {
	return func(o *options) { o.limits = limits }
}
