package expiry

import "time"

type options struct {
	gracePeriod time.Duration
	locks       *Locks
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

// WithLocks makes the element take its per-connection locks from locks, shared with whatever
// else must not overlap a connection's Request, Close or expiry.
func WithLocks(locks *Locks) Option {
	return func(o *options) { o.locks = locks }
}
