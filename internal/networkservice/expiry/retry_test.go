package expiry

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/peer"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/clock"
	"github.com/networkservicemesh/sdk/pkg/tools/clockmock"
)

// failingPlane stands for the elements behind expiry: its Close fails while failures last, as
// one refused by the next hop or stuck waiting for a descriptor does. It notes whether each Close
// could have waited for the peer's descriptors.
type failingPlane struct {
	mu          sync.Mutex
	failures    int
	descriptors []bool
}

func (p *failingPlane) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return next.Server(ctx).Request(ctx, request)
}

func (p *failingPlane) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, withDescriptors := grpcfd.FromContext(ctx)
	p.descriptors = append(p.descriptors, withDescriptors)
	if p.failures > 0 {
		p.failures--
		return nil, errors.New("PermissionDenied: no sufficient privileges")
	}
	return next.Server(ctx).Close(ctx, conn)
}

func (p *failingPlane) closes() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.descriptors...)
}

// descriptorPeer is a peer's address over the unix socket, which carries descriptors; none ever
// arrives, as from a peer that died.
type descriptorPeer struct{ net.UnixAddr }

func (*descriptorPeer) SendFD(uintptr) <-chan error              { return make(chan error) }
func (*descriptorPeer) SendFile(grpcfd.SyscallConn) <-chan error { return make(chan error) }
func (*descriptorPeer) SendFilename(string) <-chan error         { return make(chan error) }
func (*descriptorPeer) RecvFD(uint64, uint64) <-chan uintptr     { return make(chan uintptr) }
func (*descriptorPeer) RecvFile(uint64, uint64) <-chan *os.File  { return make(chan *os.File) }
func (*descriptorPeer) RecvFileByURL(string) (<-chan *os.File, error) {
	return make(chan *os.File), nil
}
func (*descriptorPeer) RecvFDByURL(string) (<-chan uintptr, error) { return make(chan uintptr), nil }

type retryTest struct {
	ctx     context.Context
	clock   *clockmock.Mock
	element *expiryServer
	plane   *failingPlane
	server  networkservice.NetworkServiceServer
	expires time.Time
}

func newRetryTest(t *testing.T, failures int, opts ...Option) *retryTest {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clockMock := clockmock.New(ctx)
	ctx = clock.WithClock(ctx, clockMock)
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &descriptorPeer{net.UnixAddr{Name: "nsmgr.sock", Net: "unix"}}})
	element := NewServer(ctx, append([]Option{WithGracePeriod(time.Second), WithRetryBackoff(time.Second, 4*time.Second)}, opts...)...).(*expiryServer)
	plane := &failingPlane{failures: failures}
	return &retryTest{ctx: ctx, clock: clockMock, element: element, plane: plane,
		server: chain.NewNetworkServiceServer(element, plane), expires: clockMock.Now().Add(time.Minute)}
}

func (r *retryTest) request(t *testing.T, id string) {
	t.Helper()
	_, err := r.server.Request(r.ctx, &networkservice.NetworkServiceRequest{Connection: connectionExpiringAt(id, r.expires)})
	require.NoError(t, err)
}

// advanceUntil moves the mock clock on until cond holds: each release attempt schedules the next
// from the goroutine that made it.
func (r *retryTest) advanceUntil(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.clock.Add(time.Second)
		return cond()
	}, 5*time.Second, 5*time.Millisecond, msg)
}

// issue 27: an expired connection whose release failed kept its VPP interfaces and journal
// record for good; the element tried once. It must try until a Close succeeds, and the retries
// must not wait for descriptors of a peer that may be gone.
func TestFailedReleaseAtExpiryIsRetriedUntilItSucceeds(t *testing.T) {
	r := newRetryTest(t, 3)
	r.request(t, "adopted")
	r.advanceUntil(t, func() bool { return len(r.plane.closes()) == 4 }, "the release was not retried until it succeeded")
	require.Equal(t, []bool{true, false, false, false}, r.plane.closes(),
		"only the first attempt may map namespaces by the peer's descriptors")
	for range 20 {
		r.clock.Add(4 * time.Second)
	}
	require.Never(t, func() bool { return len(r.plane.closes()) > 4 }, 100*time.Millisecond, 10*time.Millisecond, "retried after a release succeeded")
	require.Eventually(t, func() bool { return r.element.size() == 0 }, time.Second, 10*time.Millisecond, "a released connection must be forgotten")
}

// A Close that reached the element and failed (the peer died before sending the descriptor it
// waits for, the next hop refused it) disarmed the expiry: nothing would ever release the
// connection again. It is retried too.
func TestFailedCloseIsRetried(t *testing.T) {
	r := newRetryTest(t, 1)
	r.request(t, "closing")
	_, err := r.server.Close(r.ctx, connectionExpiringAt("closing", r.expires))
	require.Error(t, err, "the failure goes up to the caller")
	r.advanceUntil(t, func() bool { return len(r.plane.closes()) == 2 }, "the failed Close was not retried")
	require.Equal(t, []bool{true, false}, r.plane.closes())
	for range 20 {
		r.clock.Add(4 * time.Second)
	}
	require.Never(t, func() bool { return len(r.plane.closes()) > 2 }, 100*time.Millisecond, 10*time.Millisecond, "retried after a release succeeded")
}

// Once the journal released the connection by its record, a Close that keeps failing (its
// namespace can no longer be opened by descriptor) is not tried again.
func TestRetriesStopOnceTheConnectionIsReleased(t *testing.T) {
	var mu sync.Mutex
	released := false
	r := newRetryTest(t, 100, WithReleased(func(string) bool { mu.Lock(); defer mu.Unlock(); return released }))
	r.request(t, "released")
	r.advanceUntil(t, func() bool { return len(r.plane.closes()) == 2 }, "the release was not retried")
	mu.Lock()
	released = true
	mu.Unlock()
	for range 20 {
		r.clock.Add(4 * time.Second)
	}
	require.Never(t, func() bool { return len(r.plane.closes()) > 3 }, 100*time.Millisecond, 10*time.Millisecond, "retried a released connection")
	require.Eventually(t, func() bool { return r.element.size() == 0 }, time.Second, 10*time.Millisecond)
}

// A connection requested again while its release is retried is live: the retries stop, and its
// new expiry is in force.
func TestRequestAgainStopsTheRetries(t *testing.T) {
	r := newRetryTest(t, 100)
	r.request(t, "back")
	r.advanceUntil(t, func() bool { return len(r.plane.closes()) == 1 }, "not released at expiry")
	r.expires = r.clock.Now().Add(time.Hour)
	r.request(t, "back")
	attempts := len(r.plane.closes())
	for range 20 {
		r.clock.Add(4 * time.Second)
	}
	require.Never(t, func() bool { return len(r.plane.closes()) > attempts }, 100*time.Millisecond, 10*time.Millisecond,
		"a connection requested again was closed")
}
