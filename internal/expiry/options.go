package expiry

import "time"

type options struct {
	gracePeriod time.Duration
}

func defaultOptions() *options {
	return &options{
		gracePeriod: 5 * time.Second,
	}
}

// Option configures the expiry element.
type Option func(*options)

// WithGracePeriod sets how long after expiry the element waits for the regular Close (fired by
// sdk's timeout element a little before expiry) before releasing the data plane itself.
func WithGracePeriod(gracePeriod time.Duration) Option {
	return func(o *options) { o.gracePeriod = gracePeriod }
}
