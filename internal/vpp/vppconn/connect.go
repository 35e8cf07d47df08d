package vppconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/core"

	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
	"github.com/networkservicemesh/vpphelper"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
)

// Connection is a live VPP API connection.
type Connection struct {
	api.Connection
	// External is true when the VPP belongs to the operator (its socket existed).
	External bool
	// Socket is the API socket the connection uses.
	Socket string
	// Exited reports the end of a VPP the forwarder started; it is nil for an external VPP.
	Exited <-chan error
	// Lost reports that the API connection to an external VPP broke (VPP closed it, or went away);
	// Close closes it. It is nil for a VPP the forwarder started, whose end Exited reports first.
	Lost <-chan error

	disconnect  func()
	stopWatcher func()
}

// StatsSocket is VPP's statistics segment socket. VPP's packaged configuration, vpphelper's and
// the stock forwarder's external-VPP convention all put it beside the API socket.
func (c *Connection) StatsSocket() string {
	return filepath.Join(filepath.Dir(c.Socket), "stats.sock")
}

// Close releases the API connection. A VPP the forwarder started stops with the context given to
// Connect.
func (c *Connection) Close() {
	if c.stopWatcher != nil {
		c.stopWatcher()
	}
	if c.disconnect != nil {
		c.disconnect()
	}
}

// OwnSocket is the API socket of a VPP the forwarder starts with root directory rootDir
// (WithRootDir): where vpphelper's configuration has VPP listen.
func OwnSocket(rootDir string) string {
	return filepath.Join("/", rootDir, "var/run/vpp/api.sock")
}

// vppBinary is what vpphelper runs to start VPP.
const vppBinary = "vpp"

// retryInterval paces dial attempts while a just-created socket is not yet accepting.
const retryInterval = 200 * time.Millisecond

// Connect dials the VPP API socket at socket if it exists, else starts VPP when a vpp binary is
// on PATH, else fails at once. Cancelling ctx abandons connecting.
func Connect(ctx context.Context, socket string, opts ...Option) (*Connection, error) {
	o := &options{dialTimeout: 10 * time.Second, startTimeout: time.Minute}
	for _, opt := range opts {
		opt(o)
	}
	if o.lifetime == nil {
		o.lifetime = ctx
	}
	if _, err := os.Stat(socket); err == nil {
		conn, err := dialExternal(ctx, socket, o.dialTimeout)
		if err != nil {
			return nil, err
		}
		conn.Lost, conn.stopWatcher = watchLoss(conn.Connection)
		return conn, nil
	}
	binary, lookErr := exec.LookPath(vppBinary)
	if lookErr != nil {
		return nil, fmt.Errorf("no VPP API socket at %s and no %q binary on PATH to start one", socket, vppBinary)
	}
	return startOwn(ctx, o.lifetime, binary, o.rootDir, o.startTimeout)
}

// ownVPPRuns bounds the VPPs started for one Connect: a misread clock is a race lost at start-up
// (internal/vpp/vppclock), and two lost in a row are already rare.
const ownVPPRuns = 3

// startOwn starts VPP, and starts it again when it misread its clock: such a VPP stops answering
// new API clients within seconds, and only a new run mends it. Another run here spares the pod a
// restart, and the kubelet's back-off with it.
func startOwn(ctx, lifetime context.Context, binary, rootDir string, timeout time.Duration) (*Connection, error) {
	for run := 1; ; run++ {
		conn, err := startLocal(ctx, lifetime, binary, rootDir, timeout)
		if !vppclock.Misstarted(err) || run == ownVPPRuns || ctx.Err() != nil {
			return conn, err
		}
		log.FromContext(ctx).Warnf("%v; starting another (run %d of %d)", err, run+1, ownVPPRuns)
	}
}

// ConnectExisting dials the VPP API socket at socket and never starts a VPP: what a reader that
// must not change the node uses. It fails at once when there is no socket.
func ConnectExisting(ctx context.Context, socket string, timeout time.Duration) (*Connection, error) {
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("no VPP API socket at %s: %w", socket, err)
	}
	return dialExternal(ctx, socket, timeout)
}

func dialExternal(ctx context.Context, socket string, timeout time.Duration) (*Connection, error) {
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		conn, err := connectOnce(dialCtx, socket, boundedBy(dialCtx, timeout))
		if err == nil {
			return &Connection{Connection: conn, External: true, Socket: socket, disconnect: conn.Disconnect}, nil
		}
		lastErr = err
		select {
		case <-dialCtx.Done():
			if ctx.Err() != nil {
				return nil, fmt.Errorf("connecting to VPP API socket %s: %w", socket, context.Cause(ctx))
			}
			return nil, fmt.Errorf("VPP API socket %s exists but VPP did not answer within %s: %v", socket, timeout, lastErr)
		case <-time.After(retryInterval):
		}
	}
}

// connectOnce makes one connection attempt. govpp's handshake does not watch a context and can
// outlive its own timeout while reading message IDs, so the attempt runs aside: when ctx ends
// first, the attempt is abandoned and its connection, if it ever comes, is closed.
func connectOnce(ctx context.Context, socket string, timeout time.Duration) (*core.Connection, error) {
	type result struct {
		conn *core.Connection
		err  error
	}
	results := make(chan result, 1)
	go func() {
		adapter := socketclient.NewVppClient(socket)
		adapter.SetConnectTimeout(timeout)
		conn, err := core.Connect(adapter)
		results <- result{conn, err}
	}()
	select {
	case r := <-results:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-results; r.conn != nil {
				r.conn.Disconnect()
			}
		}()
		return nil, ctx.Err()
	}
}

// boundedBy returns the time left before ctx's deadline, at most limit.
func boundedBy(ctx context.Context, limit time.Duration) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < limit {
			return max(left, time.Millisecond)
		}
	}
	return limit
}

// startLocal starts VPP for lifetime. A VPP that fails to come up is stopped, and so is
// vpphelper's wait for its socket, which would otherwise last as long as lifetime. A VPP that
// misread its clock (a vppclock.Misstart) has ended when startLocal returns: the next run uses the same
// socket and shared memory.
func startLocal(ctx, lifetime context.Context, binary, rootDir string, timeout time.Duration) (c *Connection, err error) {
	vppCtx, stopVPP := context.WithCancel(lifetime)
	conn, exited := vpphelper.StartAndDialContext(vppCtx, vpphelper.WithRootDir(rootDir))
	socket := OwnSocket(rootDir)
	defer func() {
		if err != nil {
			stopVPP()
		}
		if vppclock.Misstarted(err) {
			<-exited
		}
	}()
	if conn == nil {
		return nil, fmt.Errorf("starting %s failed: %v", binary, <-exited)
	}
	if err = probe(ctx, conn, binary, socket, exited, timeout); err != nil {
		return nil, err
	}
	if err = checkClock(ctx, conn); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", binary, socket, err)
	}
	return &Connection{Connection: conn, Socket: socket, Exited: exited}, nil
}

// probe waits, at most timeout, for VPP to answer its version. A VPP that created its socket
// but has not answered answerBound later is taken for a vppclock.Misstart.
func probe(ctx context.Context, conn api.Connection, binary, socket string, exited <-chan error, timeout time.Duration) error {
	started := time.Now()
	probeCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probed := make(chan error, 1)
	go func() {
		_, err := vpe.NewServiceClient(conn).ShowVersion(probeCtx, &vpe.ShowVersion{})
		probed <- err
	}()
	select {
	case err := <-exited:
		return fmt.Errorf("%s exited before answering on %s: %v", binary, socket, err)
	case err := <-probed:
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s did not answer on %s within %s", binary, socket, timeout)
		}
		if err != nil {
			return fmt.Errorf("%s did not answer on %s: %v", binary, socket, err)
		}
		return nil
	case <-silentSince(probeCtx, socket, started, answerBound):
		return vppclock.Misstart{Err: fmt.Errorf("%s did not answer on %s within %s of creating it, as a VPP that misread its clock at start-up does", binary, socket, answerBound)}
	}
}
