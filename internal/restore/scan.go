package restore

import (
	"context"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
)

// Scan collects what a previous forwarder run left in VPP and in the forwarder's network namespace.
// Call it once at start-up, before the forwarder serves its first Request: everything it finds
// then belongs to the previous run.
func Scan(ctx context.Context, vppConn api.Connection) (*Leftovers, error) {
	inVPP, err := scanVPP(ctx, vppConn)
	if err != nil {
		return nil, err
	}
	// The zero handle works in the namespace of the calling thread, which is the forwarder's own.
	inKernel, err := scanKernel(&netlink.Handle{})
	if err != nil {
		return nil, err
	}
	return newLeftovers(append(inVPP, inKernel...)), nil
}
