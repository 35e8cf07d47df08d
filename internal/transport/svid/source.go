package svid

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spiffe/go-spiffe/v2/workloadapi"
)

// EndpointSocketEnv is where go-spiffe reads the workload API address from.
const EndpointSocketEnv = "SPIFFE_ENDPOINT_SOCKET"

// DefaultTimeout bounds the wait for the first SVID: an agent that has not attested the pod
// within a minute is not going to, and a restart makes the failure visible to the orchestrator.
const DefaultTimeout = time.Minute

// Source is an X.509 SVID and bundle source that rotates with the workload API.
type Source = workloadapi.X509Source

// Fetch connects to the workload API and returns once the first SVID has arrived, or fails
// after timeout.
func Fetch(ctx context.Context, timeout time.Duration) (*Source, error) {
	address := os.Getenv(EndpointSocketEnv)
	if address == "" {
		return nil, fmt.Errorf("%s is not set: the forwarder needs the SPIFFE workload API (spire agent socket) for its identity", EndpointSocketEnv)
	}
	fetchCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	source, err := workloadapi.NewX509Source(fetchCtx, workloadapi.WithClientOptions(workloadapi.WithAddr(address)))
	if err != nil {
		if errors.Is(fetchCtx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no X.509 SVID from the workload API at %s within %s: check that the spire agent runs and has registered this workload", address, timeout)
		}
		return nil, fmt.Errorf("X.509 SVID from the workload API at %s: %w", address, err)
	}
	return source, nil
}
