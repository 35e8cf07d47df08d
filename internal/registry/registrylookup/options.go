package registrylookup

import (
	"time"

	"google.golang.org/grpc"
)

// DefaultDialTimeout bounds a Find's wait for the connection, as sdk's registry client does.
const DefaultDialTimeout = 300 * time.Millisecond

type options struct {
	dialTimeout time.Duration
	dialOptions []grpc.DialOption
}

// Option configures the client.
type Option func(*options)

// WithDialTimeout bounds how long a Find waits for the connection to the nsmgr to be ready (the
// forwarder passes NSM_DIAL_TIMEOUT).
func WithDialTimeout(timeout time.Duration) Option {
	return func(o *options) { o.dialTimeout = timeout }
}

// WithDialOptions are the connection's dial options: transport credentials, per-call tokens.
// Blocking options do not apply: the connection is made on the first Find.
func WithDialOptions(dialOptions ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, dialOptions...) }
}
