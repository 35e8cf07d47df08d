package fdtransport

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/edwarnicke/grpcfd"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

// inode names a received descriptor as the sender's inode:// URL does.
type inode struct {
	dev, ino uint64
}

// held is a received descriptor and when it stops being claimable.
type held struct {
	fd    int
	until time.Time
}

// claim hands a duplicate of a received descriptor to whoever asked for it, or -1 when there is
// none to give (the connection closed, the wait outlasted the retention, or the duplicate
// failed). It must not block.
type claim func(fd int)

// waiter is a claim for a descriptor that has not arrived, and when it stops waiting: by then the
// call that made it has ended (see DefaultRetention), and no one would close what it got.
type waiter struct {
	give  claim
	until time.Time
}

// maxRefusedRemembered bounds how many refused inodes a connection remembers, so that a claim of
// one ends at once: a peer flooding descriptors must not grow the memory it costs without bound.
const maxRefusedRemembered = 1024

// reportEvery is how often a connection logs the descriptors it refused; the metric counts each.
const reportEvery = time.Second

// receiver holds received descriptors for retention after their last arrival, and hands
// duplicates to the claims that name them. It holds none before the peer is admitted (the
// handshake done, the peer known), and no more than the budget grants the peer.
type receiver struct {
	retention time.Duration
	budget    *Budget

	// framing keeps the handshake's reads within TLS records; nil when the handshake is not TLS,
	// and once the peer is admitted. Only the handshake's goroutine reads it.
	framing *recordFraming

	mu       sync.Mutex
	admitted bool
	peer     string
	closed   bool
	held     map[inode]*held
	refused  map[inode]time.Time // until when a claim of it ends at once
	waiting  map[inode][]waiter
	// unreported counts, by reason, the refusals not logged yet, since lastReport.
	unreported map[string]int
	lastReport time.Time
	sweep      *time.Timer // armed while anything is held, refused or waiting
}

func newReceiver(o options) receiver {
	return receiver{retention: o.retention, budget: o.budget, held: map[inode]*held{}, refused: map[inode]time.Time{}, waiting: map[inode][]waiter{}, unreported: map[string]int{}}
}

// admit lets the peer's descriptors be held from now on, counted as peer's.
func (r *receiver) admit(peer string) {
	r.framing = nil
	r.mu.Lock()
	defer r.mu.Unlock()
	r.admitted, r.peer = true, peer
}

// read reads bytes and takes in the descriptors that came with them before it returns, so that
// a claim by whatever the bytes carried finds them.
func (r *receiver) read(from unixConn, b []byte) (int, error) {
	framing := r.framing
	if framing != nil {
		b = b[:framing.room(len(b))]
	}
	oob := make([]byte, unix.CmsgSpace(4*maxFDCount))
	n, oobn, _, _, err := from.ReadMsgUnix(b, oob)
	if framing != nil && n > 0 {
		framing.consumed(b[:n])
	}
	if oobn > 0 {
		r.arrived(descriptorsIn(oob[:oobn]))
	}
	return max(n, 0), err // a failed recvmsg reports -1, which io.Reader callers must not see
}

func descriptorsIn(oob []byte) []int {
	messages, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range messages {
		if rights, err := unix.ParseUnixRights(&messages[i]); err == nil {
			fds = append(fds, rights...)
		}
	}
	return fds
}

func (r *receiver) arrived(fds []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	until := time.Now().Add(r.retention)
	refused := map[string]int{}
	for _, fd := range fds {
		var stat unix.Stat_t
		if r.closed || unix.Fstat(fd, &stat) != nil {
			_ = unix.Close(fd)
			continue
		}
		key := inode{dev: stat.Dev, ino: stat.Ino}
		if h, ok := r.held[key]; ok {
			_ = unix.Close(fd) // the same file again: keep the one held, for longer
			h.until = until
			continue
		}
		if reason := r.admission(); reason != "" {
			_ = unix.Close(fd)
			refused[reason]++
			if reason != RefusedUnauthenticated { // no claim can be waiting before the handshake
				r.refuse(key, until)
			}
			continue
		}
		r.held[key] = &held{fd: fd, until: until}
		delete(r.refused, key)
		for _, w := range r.waiting[key] {
			w.give(duplicate(fd))
		}
		delete(r.waiting, key)
		fwdmetrics.DescriptorsHeld(context.Background(), 1)
	}
	r.report(refused)
	r.armSweep()
}

// admission says why a descriptor that just arrived may not be held, or "" when it may; a
// descriptor it lets be held is counted in the budget.
func (r *receiver) admission() (refused string) {
	if !r.admitted {
		return RefusedUnauthenticated
	}
	return r.budget.take(r.peer)
}

// refuse ends the claims of a refused descriptor at once, and those that come within the
// retention: the call that needed it fails instead of waiting for what is gone.
func (r *receiver) refuse(key inode, until time.Time) {
	for _, w := range r.waiting[key] {
		w.give(-1)
	}
	delete(r.waiting, key)
	if _, known := r.refused[key]; known || len(r.refused) < maxRefusedRemembered {
		r.refused[key] = until
	}
}

// report counts what was refused, and logs it at most once per reportEvery per connection: a
// flooding peer must not flood the log too.
func (r *receiver) report(refused map[string]int) {
	for reason, n := range refused {
		fwdmetrics.DescriptorsRefused(context.Background(), reason, n)
		r.unreported[reason] += n
	}
	if len(r.unreported) == 0 || time.Since(r.lastReport) < reportEvery {
		return
	}
	r.lastReport = time.Now()
	for reason, n := range r.unreported {
		if reason == RefusedUnauthenticated {
			log.L().Warnf("fdtransport: closed %d file descriptors a peer on %s passed before its handshake completed", n, r.peerName())
			continue
		}
		log.L().Errorf("fdtransport: closed %d file descriptors from %s at once: over the cap of %d held (%s); the calls that name them fail",
			n, r.peerName(), r.budget.limit(reason), reason)
	}
	clear(r.unreported)
}

func (r *receiver) peerName() string {
	if r.peer == "" {
		return "an unauthenticated connection"
	}
	return r.peer
}

// armSweep makes sure a sweep comes. Every deadline set since the timer was armed is later than
// the one it was armed for, so one timer per connection does.
func (r *receiver) armSweep() {
	if r.sweep == nil && (len(r.held) > 0 || len(r.refused) > 0 || len(r.waiting) > 0) {
		r.sweep = time.AfterFunc(r.retention, r.sweepExpired)
	}
}

// sweepExpired closes what is past its retention, ends the waits past theirs, and sets the timer
// for the next deadline.
func (r *receiver) sweepExpired() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	now := time.Now()
	var next time.Time
	due := func(until time.Time) bool {
		if !until.After(now) {
			return true
		}
		if next.IsZero() || until.Before(next) {
			next = until
		}
		return false
	}
	released := 0
	for key, h := range r.held {
		if due(h.until) {
			_ = unix.Close(h.fd)
			delete(r.held, key)
			released++
		}
	}
	r.release(released)
	for key, until := range r.refused {
		if due(until) {
			delete(r.refused, key)
		}
	}
	for key, waiters := range r.waiting {
		still := waiters[:0]
		for _, w := range waiters {
			if due(w.until) {
				w.give(-1)
			} else {
				still = append(still, w)
			}
		}
		if len(still) == 0 {
			delete(r.waiting, key)
		} else {
			r.waiting[key] = still
		}
	}
	if next.IsZero() {
		r.sweep = nil
		return
	}
	r.sweep.Reset(next.Sub(now))
}

func (r *receiver) recv(key inode, give claim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch h, ok := r.held[key]; {
	case r.closed:
		give(-1)
	case ok:
		give(duplicate(h.fd))
	case time.Now().Before(r.refused[key]):
		give(-1)
	default:
		r.waiting[key] = append(r.waiting[key], waiter{give: give, until: time.Now().Add(r.retention)})
		r.armSweep()
	}
}

func (r *receiver) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.sweep != nil {
		r.sweep.Stop()
		r.sweep = nil
	}
	released := len(r.held)
	for key, h := range r.held {
		_ = unix.Close(h.fd)
		delete(r.held, key)
	}
	r.release(released)
	clear(r.refused)
	for key, waiters := range r.waiting {
		for _, w := range waiters {
			w.give(-1)
		}
		delete(r.waiting, key)
	}
}

// release gives the budget back n descriptors no longer held.
func (r *receiver) release(n int) {
	if n > 0 {
		r.budget.release(r.peer, n)
		fwdmetrics.DescriptorsHeld(context.Background(), -n)
	}
}

// RecvFD returns a channel that yields a duplicate of the descriptor of (dev, ino) once it has
// arrived, and closes; it closes empty if the connection closes first or nothing arrives within
// the retention.
func (r *receiver) RecvFD(dev, ino uint64) <-chan uintptr {
	fds := make(chan uintptr, 1)
	r.recv(inode{dev: dev, ino: ino}, func(fd int) {
		if fd >= 0 {
			fds <- uintptr(fd)
		}
		close(fds)
	})
	return fds
}

// RecvFile is RecvFD as an *os.File named /proc/<pid>/fd/<n>, as grpcfd names it: sdk's recvfd
// makes that name the file:// URL the chain opens.
func (r *receiver) RecvFile(dev, ino uint64) <-chan *os.File {
	files := make(chan *os.File, 1)
	r.recv(inode{dev: dev, ino: ino}, func(fd int) {
		if fd >= 0 {
			files <- os.NewFile(uintptr(fd), fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd))
		}
		close(files)
	})
	return files
}

// RecvFDByURL is RecvFD for an inode://<dev>/<ino> URL.
func (r *receiver) RecvFDByURL(urlStr string) (<-chan uintptr, error) {
	dev, ino, err := grpcfd.URLStringToDevIno(urlStr)
	if err != nil {
		return nil, err
	}
	return r.RecvFD(dev, ino), nil
}

// RecvFileByURL is RecvFile for an inode://<dev>/<ino> URL.
func (r *receiver) RecvFileByURL(urlStr string) (<-chan *os.File, error) {
	dev, ino, err := grpcfd.URLStringToDevIno(urlStr)
	if err != nil {
		return nil, err
	}
	return r.RecvFile(dev, ino), nil
}

// duplicate gives a claim its own descriptor, so that it may close it whenever it likes.
func duplicate(fd int) int {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return dup
}
