package restore

import (
	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/journal"
)

type scanOptions struct {
	journal       *journal.Journal
	kernelCleanup networkservice.NetworkServiceServer
}

// Option configures Scan.
type Option func(*scanOptions)

// WithJournal adds the connections recorded in j to the leftovers. Their kernel state (policy
// rules, routes) is left to the chain when the connection is requested again, and otherwise
// released by closing the recorded connection on kernelCleanup, then forgetting it in j.
func WithJournal(j *journal.Journal, kernelCleanup networkservice.NetworkServiceServer) Option {
	return func(o *scanOptions) {
		o.journal = j
		o.kernelCleanup = kernelCleanup
	}
}
