package fdtransport

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/edwarnicke/grpcfd"
	"golang.org/x/sys/unix"
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

// receiver holds received descriptors for retention after their last arrival, and hands
// duplicates to the claims that name them.
type receiver struct {
	retention time.Duration

	mu      sync.Mutex
	closed  bool
	held    map[inode]*held
	waiting map[inode][]waiter
	sweep   *time.Timer // armed while anything is held or waiting
}

func newReceiver(retention time.Duration) receiver {
	return receiver{retention: retention, held: map[inode]*held{}, waiting: map[inode][]waiter{}}
}

// read reads bytes and takes in the descriptors that came with them before it returns, so that
// a claim by whatever the bytes carried finds them.
func (r *receiver) read(from unixConn, b []byte) (int, error) {
	oob := make([]byte, unix.CmsgSpace(4*maxFDCount))
	n, oobn, _, _, err := from.ReadMsgUnix(b, oob)
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
		} else {
			r.held[key] = &held{fd: fd, until: until}
		}
		for _, w := range r.waiting[key] {
			w.give(duplicate(r.held[key].fd))
		}
		delete(r.waiting, key)
	}
	r.armSweep()
}

// armSweep makes sure a sweep comes. Every deadline set since the timer was armed is later than
// the one it was armed for, so one timer per connection does.
func (r *receiver) armSweep() {
	if r.sweep == nil && (len(r.held) > 0 || len(r.waiting) > 0) {
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
	for key, h := range r.held {
		if due(h.until) {
			_ = unix.Close(h.fd)
			delete(r.held, key)
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
	for key, h := range r.held {
		_ = unix.Close(h.fd)
		delete(r.held, key)
	}
	for key, waiters := range r.waiting {
		for _, w := range waiters {
			w.give(-1)
		}
		delete(r.waiting, key)
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
