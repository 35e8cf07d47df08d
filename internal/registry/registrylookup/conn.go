package registrylookup

import (
	"context"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
)

// maxReconnectDelay caps gRPC's reconnection backoff (2 minutes by default): an nsmgr that has
// restarted is reached on the Find after it, not minutes later.
const maxReconnectDelay = time.Second

// readyConn is a connection whose calls first wait, for at most the dial timeout, until it is
// ready: a Find fails as fast as a fresh dial would while the nsmgr is away.
type readyConn struct {
	*grpc.ClientConn
	target      string
	dialTimeout time.Duration
}

func newReadyConn(target string, o *options) (*readyConn, error) {
	dialOptions := append(o.dialOptions, grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: backoff.DefaultConfig.Multiplier, Jitter: backoff.DefaultConfig.Jitter, MaxDelay: maxReconnectDelay},
		MinConnectTimeout: o.dialTimeout,
	}))
	cc, err := grpc.NewClient(target, dialOptions...)
	if err != nil {
		return nil, errors.Wrapf(err, "registry client for %s", target)
	}
	return &readyConn{ClientConn: cc, target: target, dialTimeout: o.dialTimeout}, nil
}

func (c *readyConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	return c.ClientConn.Invoke(ctx, method, args, reply, opts...)
}

func (c *readyConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	return c.ClientConn.NewStream(ctx, desc, method, opts...)
}

func (c *readyConn) waitReady(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	for {
		state := c.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			c.Connect()
		case connectivity.Shutdown:
			return errors.Errorf("can not dial to %s: the registry client is closed", c.target)
		}
		if !c.WaitForStateChange(waitCtx, state) {
			return errors.Wrapf(waitCtx.Err(), "can not dial to %s (%s)", c.target, state)
		}
	}
}
