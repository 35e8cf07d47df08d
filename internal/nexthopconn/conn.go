package nexthopconn

import (
	"context"
	"net/url"
	"sync"

	"github.com/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
)

// keptConn is one connection's link to its next hop: the gRPC connection and the URL it was
// dialled to. Calls go to whichever connection is current; none holds the lock while it runs.
type keptConn struct {
	o        *options
	stopped  func() bool // ends the chain context's hold on it
	mu       sync.Mutex
	target   *url.URL
	cc       *grpc.ClientConn
	isClosed bool
}

func newKeptConn(chainCtx context.Context, o *options) *keptConn {
	k := &keptConn{o: o}
	k.stopped = context.AfterFunc(chainCtx, func() { _ = k.close() })
	return k
}

func (k *keptConn) dialledTo() *url.URL {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.target
}

// ensure leaves a ready connection to target current: the kept one when it is to target and
// ready, or one dialled now.
func (k *keptConn) ensure(ctx context.Context, target *url.URL) error {
	k.mu.Lock()
	cc, same := k.cc, k.target != nil && k.target.String() == target.String()
	k.mu.Unlock()
	if cc != nil && same && k.ready(ctx, cc) {
		return nil
	}
	return k.dial(ctx, target)
}

// ready says whether cc is ready, waking it within the dial timeout when it has gone idle. A
// connection that is connecting or failing is not waited for: a fresh dial fails as fast as the
// next hop refuses, as sdk's dial would on every Request.
func (k *keptConn) ready(ctx context.Context, cc *grpc.ClientConn) bool {
	state := cc.GetState()
	if state != connectivity.Idle {
		return state == connectivity.Ready
	}
	cc.Connect()
	waitCtx, cancel := k.withDialTimeout(ctx)
	defer cancel()
	for state = cc.GetState(); state != connectivity.Ready; state = cc.GetState() {
		if state == connectivity.TransientFailure || state == connectivity.Shutdown || !cc.WaitForStateChange(waitCtx, state) {
			return false
		}
	}
	return true
}

// dial makes a new connection to target current and closes the one it replaces.
func (k *keptConn) dial(ctx context.Context, target *url.URL) error {
	dialCtx, cancel := k.withDialTimeout(ctx)
	defer cancel()
	//nolint:staticcheck // DialContext, as sdk's dial: the forwarder's dial options block until ready.
	cc, err := grpc.DialContext(dialCtx, grpcutils.URLToTarget(target), k.o.dialOptions...)
	if err != nil {
		return errors.Wrapf(err, "failed to dial %s", grpcutils.URLToTarget(target))
	}
	k.mu.Lock()
	if k.isClosed {
		k.mu.Unlock()
		_ = cc.Close()
		return errors.Errorf("failed to dial %s: the chain is closing", grpcutils.URLToTarget(target))
	}
	replaced := k.cc
	k.cc, k.target = cc, target
	k.mu.Unlock()
	if replaced != nil {
		_ = replaced.Close()
	}
	return nil
}

func (k *keptConn) withDialTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.o.dialTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, k.o.dialTimeout)
}

// close closes the current connection; the keptConn dials no more.
func (k *keptConn) close() error {
	k.stopped()
	k.mu.Lock()
	cc := k.cc
	k.cc, k.isClosed = nil, true
	k.mu.Unlock()
	if cc == nil {
		return nil
	}
	return cc.Close()
}

func (k *keptConn) current() (*grpc.ClientConn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cc == nil {
		return nil, errors.New("nexthopconn: no connection to the next hop")
	}
	return k.cc, nil
}

func (k *keptConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	cc, err := k.current()
	if err != nil {
		return err
	}
	return cc.Invoke(ctx, method, args, reply, opts...)
}

func (k *keptConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cc, err := k.current()
	if err != nil {
		return nil, err
	}
	return cc.NewStream(ctx, desc, method, opts...)
}
