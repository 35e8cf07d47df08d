package monitorretry

import (
	"context"
	"time"
)

// EndpointLookup says whether the endpoint named endpointName is still registered. An error means
// the registry could not tell; the break is then judged by the re-open alone.
type EndpointLookup func(ctx context.Context, endpointName string) (registered bool, err error)

type options struct {
	reopenTimeout  time.Duration
	endpointLookup EndpointLookup
}

func defaultOptions() *options {
	return &options{reopenTimeout: time.Second}
}

// Option configures the re-open.
type Option func(*options)

// WithReopenTimeout bounds the single re-open attempt after a break (the forwarder passes
// NSM_DIAL_TIMEOUT): a next hop that neither answers nor refuses within it is reported. Zero or
// less turns re-opening off, so that every break is reported at once, as the stock forwarder does.
func WithReopenTimeout(timeout time.Duration) Option {
	return func(o *options) { o.reopenTimeout = timeout }
}

// WithEndpointLookup asks lookup, while the re-open is under way, whether the endpoint of the
// watched connection is still registered; one that is not is reported without waiting for the
// re-open.
func WithEndpointLookup(lookup EndpointLookup) Option {
	return func(o *options) { o.endpointLookup = lookup }
}
