package monitorretry

import "time"

type options struct {
	window         time.Duration
	initialBackoff time.Duration
	maxBackoff     time.Duration
}

func defaultOptions() *options {
	return &options{
		window:         10 * time.Second,
		initialBackoff: 50 * time.Millisecond,
		maxBackoff:     time.Second,
	}
}

// Option configures the retry behaviour.
type Option func(*options)

// WithWindow bounds how long a broken stream is retried before the error is passed on. A window
// of zero or less turns retrying off.
func WithWindow(window time.Duration) Option {
	return func(o *options) { o.window = window }
}

// WithBackoff sets the pause after the first failed re-open and its upper bound; the pause doubles
// after every further failure.
func WithBackoff(initial, maxBackoff time.Duration) Option {
	return func(o *options) {
		o.initialBackoff = initial
		o.maxBackoff = maxBackoff
	}
}
