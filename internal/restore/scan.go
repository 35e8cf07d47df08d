package restore

import (
	"context"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
)

// Scan collects what a previous forwarder run left in VPP, in the forwarder's network namespace
// and, with WithJournal, in its clients' namespaces. Call it once at start-up, before the
// forwarder serves its first Request: everything it finds then belongs to the previous run.
func Scan(ctx context.Context, vppConn api.Connection, opts ...Option) (*Leftovers, error) {
	o := &scanOptions{}
	for _, opt := range opts {
		opt(o)
	}
	inVPP, err := scanVPP(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	// The zero handle works in the namespace of the calling thread, which is the forwarder's own.
	inKernel, err := scanKernel(&netlink.Handle{})
	if err != nil {
		return nil, err
	}
	// Found last, so released first: the connection's interface is still there to find its routes by.
	inJournal := scanJournal(o.journal, o.kernelCleanup)
	return newLeftovers(append(append(inVPP, inKernel...), inJournal...)), nil
}
