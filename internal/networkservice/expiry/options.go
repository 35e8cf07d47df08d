package expiry

import "time"

type options struct {
	gracePeriod time.Duration
	locks       *Locks
	// retryFirst and retryMax bound the backoff between release attempts.
	retryFirst, retryMax time.Duration
	released             func(id string) bool
}

func defaultOptions() *options {
	return &options{
		gracePeriod: 5 * time.Second,
		retryFirst:  time.Second,
		retryMax:    time.Minute,
		released:    func(string) bool { return false },
	}
}

// retryDelay is the wait before the attempt after attempt: doubling from retryFirst up to retryMax.
func (o *options) retryDelay(attempt int) time.Duration {
	delay := o.retryFirst
	for range attempt {
		if delay >= o.retryMax/2 {
			return o.retryMax
		}
		delay *= 2
	}
	return min(delay, o.retryMax)
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

// WithRetryBackoff sets the wait before the first retry of a failed release and the longest wait
// between retries (default 1 s, doubling up to 1 min).
func WithRetryBackoff(first, most time.Duration) Option {
	return func(o *options) { o.retryFirst, o.retryMax = first, max(first, most) }
}

// WithReleased tells the element when a connection whose Close failed has nothing left to release
// although no Close succeeded: the forwarder's journal no longer holds it (its record-based release
// succeeded). Without it, a failed release is retried until a Close succeeds.
func WithReleased(released func(id string) bool) Option {
	return func(o *options) { o.released = released }
}
