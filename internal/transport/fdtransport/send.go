package fdtransport

import (
	"os"
	"sync"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
)

// outgoing is a descriptor of this side's own, waiting for the next write, and where the outcome
// of sending it is reported.
type outgoing struct {
	fd     int
	result chan error
}

// sender queues descriptors and sends them with the first byte of the next write.
type sender struct {
	writing sync.Mutex // one write at a time, so that descriptors go out in the order queued

	mu      sync.Mutex // guards what follows; never held across a write
	closed  bool
	pending []outgoing
}

// SendFD sends a duplicate of fd with the next write; the channel reports a failure, and closes
// once fd could not be sent, or successReportDelay after it was.
func (s *sender) SendFD(fd uintptr) <-chan error {
	dup, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return failed(errors.Wrapf(err, "duplicating descriptor %d to send it", fd))
	}
	return s.queue(dup)
}

// SendFile sends a duplicate of file's descriptor with the next write.
func (s *sender) SendFile(file grpcfd.SyscallConn) <-chan error {
	raw, err := file.SyscallConn()
	if err != nil {
		return failed(errors.Wrapf(err, "no descriptor to send in %v", file))
	}
	var result <-chan error
	if err := raw.Control(func(fd uintptr) { result = s.SendFD(fd) }); err != nil {
		return failed(errors.Wrapf(err, "no descriptor to send in %v", file))
	}
	return result
}

// SendFilename opens filename without reading or writing it (O_PATH), as grpcfd does, and sends
// that descriptor with the next write.
func (s *sender) SendFilename(filename string) <-chan error {
	fd, err := unix.Open(filename, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return failed(&os.PathError{Op: "open", Path: filename, Err: err})
	}
	return s.queue(fd)
}

// queue takes fd over: it is closed once sent or once it can no longer be.
func (s *sender) queue(fd int) <-chan error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = unix.Close(fd)
		return failed(errors.New("unable to send a descriptor: the connection is closed"))
	}
	result := make(chan error, 1)
	s.pending = append(s.pending, outgoing{fd: fd, result: result})
	return result
}

func (s *sender) take() []outgoing {
	s.mu.Lock()
	defer s.mu.Unlock()
	batch := s.pending[:min(len(s.pending), maxFDCount)]
	s.pending = s.pending[len(batch):]
	return batch
}

func (s *sender) write(to unixConn, b []byte) (int, error) {
	s.writing.Lock()
	defer s.writing.Unlock()
	if len(b) == 0 {
		return to.Write(b)
	}
	batch := s.take()
	if len(batch) == 0 {
		return to.Write(b)
	}
	fds := make([]int, len(batch))
	for i, out := range batch {
		fds[i] = out.fd
	}
	_, _, err := to.WriteMsgUnix(b[:1], unix.UnixRights(fds...), nil)
	for _, out := range batch {
		finish(out, err)
	}
	if err != nil {
		return 0, err
	}
	n, err := to.Write(b[1:])
	return n + 1, err
}

func (s *sender) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, out := range s.pending {
		finish(out, errors.Errorf("unable to send descriptor %d: the connection closed", out.fd))
	}
	s.pending = nil
}

// successReportDelay is how long a sent descriptor's channel stays open before it closes without
// error. sdk's sendfd looks at the channel once, right after queueing, and takes a channel that is
// already closed for an immediate failure with no error: it returns nil without swapping the
// file:// URL for the inode:// one the peer needs. Another call's write on the same connection can
// send the descriptor within that instant, so success is never reported at once. (grpcfd has the
// same window and reports "file already closed" from it instead, as the load runs showed.)
const successReportDelay = time.Second

func finish(out outgoing, err error) {
	_ = unix.Close(out.fd)
	if err != nil {
		out.result <- err
		close(out.result)
		return
	}
	time.AfterFunc(successReportDelay, func() { close(out.result) })
}

func failed(err error) <-chan error {
	result := make(chan error, 1)
	result <- err
	close(result)
	return result
}
