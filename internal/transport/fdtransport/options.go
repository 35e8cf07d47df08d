package fdtransport

import "time"

// DefaultRetention is how long a received descriptor waits to be claimed. A call claims its
// descriptors as it starts; NSM clients give a Request 15 s (cmd-nsc's NSM_REQUEST_TIMEOUT), and
// every hop passes that deadline on, so a minute outlasts any call a descriptor can ride with,
// even one that queued behind an earlier Request for the same connection.
const DefaultRetention = time.Minute

type options struct {
	retention time.Duration
	budget    *Budget
}

// Option configures TransportCredentials.
type Option func(*options)

// WithRetention sets how long a received descriptor stays claimable after its last arrival; a
// non-positive d keeps DefaultRetention.
func WithRetention(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.retention = d
		}
	}
}

// WithBudget makes the connections count the descriptors they hold against budget, shared with
// every other connection given the same; without it they share one budget of the default caps.
func WithBudget(budget *Budget) Option {
	return func(o *options) {
		if budget != nil {
			o.budget = budget
		}
	}
}

func optionsOf(opts []Option) options {
	o := options{retention: DefaultRetention, budget: defaultBudget}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
