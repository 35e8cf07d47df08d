package nexthopconn

import (
	"time"

	"google.golang.org/grpc"
)

type options struct {
	dialTimeout time.Duration
	dialOptions []grpc.DialOption
}

// Option configures the element.
type Option func(*options)

// WithDialTimeout bounds each dial, and the wait for a kept connection that has gone idle to be
// ready again (the forwarder passes NSM_DIAL_TIMEOUT).
func WithDialTimeout(timeout time.Duration) Option {
	return func(o *options) { o.dialTimeout = timeout }
}

// WithDialOptions are the options of each dial.
func WithDialOptions(dialOptions ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, dialOptions...) }
}
