package routeview

import (
	"encoding/binary"
	"strconv"
	"syscall"
	"time"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
)

const (
	// batchSize bounds the messages per sendmsg so that even if all fail, their error replies fit the socket's
	// receive buffer; the kernel drops replies that do not fit.
	batchSize      = 128
	receiveTimeout = 10 * time.Second
	// dumpRetries bounds re-reads when a dump was interrupted by a concurrent change.
	dumpRetries = 5
)

// errDumpInterrupted is a dump the kernel marked inconsistent because the namespace changed under it.
var errDumpInterrupted = errors.New("dump interrupted by concurrent changes")

// requestConn is the socket for dumps, link lookups and writes. It sends many writes per sendmsg instead
// of one round trip per write: the kernel handles the messages of a buffer in order, before sendmsg
// returns, and reports errors even without NLM_F_ACK; so only the last message of a batch asks for an
// acknowledgement, which then marks the end of the batch's replies.
type requestConn struct {
	fd  int
	seq uint32
	buf []byte
}

func newRequestConn(fd int) *requestConn {
	return &requestConn{fd: fd, buf: make([]byte, 64<<10)}
}

// write applies ops in order, calling afterBatch after each batch, and returns the first failure; later
// ops of the same batch are still attempted by the kernel, so callers order ops so that a failure never
// leaves traffic without a route.
func (c *requestConn) write(ops []Op, afterBatch func()) error {
	var firstErr error
	for start := 0; start < len(ops); start += batchSize {
		end := min(start+batchSize, len(ops))
		if err := c.writeBatch(ops[start:end]); err != nil && firstErr == nil {
			firstErr = err
		}
		afterBatch()
	}
	return firstErr
}

func (c *requestConn) writeBatch(ops []Op) error {
	firstSeq := c.seq + 1
	var msgs []byte
	for i := range ops {
		c.seq++
		flags := uint16(unix.NLM_F_REQUEST) | ops[i].flags
		if i == len(ops)-1 {
			flags |= unix.NLM_F_ACK
		}
		msgs = appendMessage(msgs, ops[i].msgType, flags, c.seq, ops[i].payload)
	}
	if err := unix.Sendto(c.fd, msgs, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return errors.Wrap(err, "failed to send netlink batch")
	}
	var firstErr error
	done := false
	err := c.receive(func(msgType, _ uint16, seq uint32, payload []byte) bool {
		if msgType != unix.NLMSG_ERROR || seq < firstSeq || seq > c.seq || len(payload) < 4 {
			return true
		}
		op := &ops[seq-firstSeq]
		errno := syscall.Errno(-int32(binary.NativeEndian.Uint32(payload[:4])))
		if errno != 0 && errno != op.alreadyDone && firstErr == nil {
			firstErr = errors.Wrapf(errno, "%s", op.what)
		}
		done = seq == c.seq
		return !done
	})
	if err != nil {
		return errors.Wrap(err, "failed to receive netlink replies")
	}
	return firstErr
}

// dump sends a dump request and hands each reply of it to each until the kernel is done. It reports an
// interrupted dump as errDumpInterrupted, after reading it to the end.
func (c *requestConn) dump(msgType uint16, payload []byte, each func(msgType uint16, payload []byte)) error {
	c.seq++
	seq := c.seq
	request := appendMessage(nil, msgType, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, seq, payload)
	if err := unix.Sendto(c.fd, request, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	var result error
	interrupted := false
	err := c.receive(func(replyType, flags uint16, replySeq uint32, reply []byte) bool {
		if replySeq != seq {
			return true
		}
		interrupted = interrupted || flags&unix.NLM_F_DUMP_INTR != 0
		switch replyType {
		case unix.NLMSG_DONE:
			return false
		case unix.NLMSG_ERROR:
			if len(reply) >= 4 {
				if errno := unix.Errno(-int32(binary.NativeEndian.Uint32(reply[:4]))); errno != 0 {
					result = errno
					return false
				}
			}
		default:
			each(replyType, reply)
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case result != nil:
		return result
	case interrupted:
		return errDumpInterrupted
	}
	return nil
}

// dumpConsistent repeats a dump the kernel reports as interrupted; reset forgets a partial result.
func (c *requestConn) dumpConsistent(msgType uint16, payload []byte, reset func(), each func(msgType uint16, payload []byte)) error {
	var err error
	for range dumpRetries {
		reset()
		if err = c.dump(msgType, payload, each); !errors.Is(err, errDumpInterrupted) {
			return err
		}
	}
	return err
}

// link asks the kernel for one interface by name. A full link dump or the netlink
// library's LinkByName decodes every attribute and statistic, which costs more than a small Request.
func (c *requestConn) link(name string) (found link, err error) {
	c.seq++
	seq := c.seq
	payload := make([]byte, unix.SizeofIfInfomsg)
	attrType := uint16(unix.IFLA_IFNAME)
	if len(name) >= unix.IFNAMSIZ {
		attrType = unix.IFLA_ALT_IFNAME
	}
	payload = appendAttr(payload, attrType, append([]byte(name), 0))
	request := appendMessage(nil, unix.RTM_GETLINK, unix.NLM_F_REQUEST, seq, payload)
	if err := unix.Sendto(c.fd, request, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return found, err
	}
	ok := false
	recvErr := c.receive(func(msgType, _ uint16, replySeq uint32, reply []byte) bool {
		if replySeq != seq {
			return true
		}
		switch msgType {
		case unix.NLMSG_ERROR:
			if len(reply) >= 4 {
				if errno := unix.Errno(-int32(binary.NativeEndian.Uint32(reply[:4]))); errno != 0 {
					err = errno
					return false
				}
			}
		case unix.RTM_NEWLINK:
			found, ok = parseLink(reply)
			return false
		}
		return true
	})
	if recvErr != nil {
		return found, recvErr
	}
	if err == nil && !ok {
		err = errors.New("malformed link reply")
	}
	return found, err
}

// setLinkUp sets the link's IFF_UP flag and nothing else.
func (c *requestConn) setLinkUp(index int) error {
	payload := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(payload[4:8], uint32(index))
	binary.NativeEndian.PutUint32(payload[8:12], unix.IFF_UP)
	binary.NativeEndian.PutUint32(payload[12:16], unix.IFF_UP)
	return c.writeBatch([]Op{{msgType: unix.RTM_NEWLINK, payload: payload, what: linkName(index)}})
}

type linkName int

func (l linkName) String() string { return "link " + strconv.Itoa(int(l)) }

// receive reads datagrams and hands each message to handle until handle returns false.
func (c *requestConn) receive(handle func(msgType, flags uint16, seq uint32, payload []byte) bool) error {
	for {
		n, err := receiveWait(c.fd, c.buf)
		if err != nil {
			return err
		}
		more, ok := splitMessages(c.buf[:n], handle)
		if !ok {
			return errors.New("malformed netlink message")
		}
		if !more {
			return nil
		}
	}
}

// splitMessages hands each message of one datagram to handle; more is false once handle returned false.
func splitMessages(b []byte, handle func(msgType, flags uint16, seq uint32, payload []byte) bool) (more, ok bool) {
	for len(b) >= unix.SizeofNlMsghdr {
		length := int(binary.NativeEndian.Uint32(b[0:4]))
		if length < unix.SizeofNlMsghdr || length > len(b) {
			return false, false
		}
		msgType := binary.NativeEndian.Uint16(b[4:6])
		flags := binary.NativeEndian.Uint16(b[6:8])
		seq := binary.NativeEndian.Uint32(b[8:12])
		payload := b[unix.SizeofNlMsghdr:length]
		b = b[min(nlmAlign(length), len(b)):]
		if !handle(msgType, flags, seq, payload) {
			return false, true
		}
	}
	return true, true
}

// receiveWait reads one datagram, waiting for it at most receiveTimeout.
func receiveWait(fd int, buf []byte) (int, error) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EAGAIN):
			return 0, err
		}
		ready, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(receiveTimeout/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return 0, err
		}
		if ready == 0 {
			return 0, unix.ETIMEDOUT
		}
	}
}
