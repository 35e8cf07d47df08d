package domain

import (
	"context"
	"time"
)

// WithPassThroughTo makes the endpoint a pass-through, as those of NSM's features/nse-composition:
// it asks onward for service through its nsmgr with the same path and IP context, and
// cross-connects its two kernel interfaces (e2e-nse's NSM_PASS_THROUGH_TO). Its own addresses
// (StartEndpoint's cidr) are never handed out.
func WithPassThroughTo(service string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_PASS_THROUGH_TO="+service)
	}
}

// Kill SIGKILLs the endpoint, as an OOM kill does: no unregistration, and its pod and what the
// forwarder put there stay. Respawn starts it again.
func (e *Endpoint) Kill() { e.Proc.Kill() }

// Respawn starts the endpoint again after Kill, with the same environment, and returns once
// the new run is registered.
func (e *Endpoint) Respawn(ctx context.Context) (err error) {
	e.Proc, err = respawn(ctx, e.Proc, endpointRegistered)
	return err
}

// Respawn starts the client again in its pod after Kill, as a kubelet restarts a crashed cmd-nsc
// container: the same name, so the same connection IDs (e2e-nsc names each connection
// <name>-<index>), and returns once it was granted every connection again.
func (c *Client) Respawn(ctx context.Context) (err error) {
	since := time.Now()
	if err = c.StartAgain(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err = poll(ctx, c.Proc, func() (bool, error) {
		written, statErr := c.ConnectionsWritten()
		return statErr == nil && written.After(since), nil
	}, "%s was not granted its connections again", c.Name); err != nil {
		return err
	}
	return c.ReloadConnections()
}

// StartAgain starts the client again in its pod after it was killed or closed, as a kubelet
// restarts a cmd-nsc container: the same name, so the same connection IDs. It returns at once;
// WaitGranted or ConnectionsWritten tell when it is granted.
func (c *Client) StartAgain() error {
	restarted, err := c.Proc.Respawn()
	if err != nil {
		return err
	}
	c.Proc = restarted
	return nil
}
