package policyroute

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"github.com/pkg/errors"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

const (
	// batchSize bounds the messages per sendmsg so that even if all fail, their error replies fit the socket's
	// receive buffer; the kernel drops replies that do not fit.
	batchSize      = 128
	receiveTimeout = 10 * time.Second
)

// writeOp is one rtnetlink write: a rule or route add, replace or delete.
type writeOp struct {
	msgType uint16
	flags   uint16
	payload []byte
	// alreadyDone is the errno meaning the write's effect is already in place (a delete of something gone).
	alreadyDone syscall.Errno
	what        fmt.Stringer
}

// rtnlConn is the rtnetlink socket for link lookups, rule dumps and writes. It sends many writes per sendmsg
// instead of one round trip per write: the kernel handles the messages of a buffer in order, before sendmsg
// returns, and reports errors even without NLM_F_ACK; so only the last message of a batch asks for an
// acknowledgement, which then marks the end of the batch's replies.
type rtnlConn struct {
	socket *nl.NetlinkSocket
	seq    uint32
	buf    []byte
}

func newRtnlConn(socket *nl.NetlinkSocket) *rtnlConn {
	_ = unix.SetsockoptInt(socket.GetFd(), unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	return &rtnlConn{socket: socket, buf: make([]byte, 1<<16)}
}

func (w *rtnlConn) Close() {
	w.socket.Close()
}

// write applies ops in order and returns the first failure; later ops of the same batch are still attempted
// by the kernel, so callers order ops so that a failure never leaves policy traffic without a table.
func (w *rtnlConn) write(ops []writeOp) error {
	var firstErr error
	for start := 0; start < len(ops); start += batchSize {
		end := min(start+batchSize, len(ops))
		if err := w.writeBatch(ops[start:end]); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (w *rtnlConn) writeBatch(ops []writeOp) error {
	firstSeq := w.seq + 1
	var msgs []byte
	for i := range ops {
		w.seq++
		msgs = appendMessage(msgs, &ops[i], w.seq, i == len(ops)-1)
	}
	if err := unix.Sendto(w.socket.GetFd(), msgs, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return errors.Wrap(err, "failed to send netlink batch")
	}

	var firstErr error
	for {
		replies, err := w.receive()
		if err != nil {
			return errors.Wrapf(err, "failed to receive netlink replies")
		}
		for i := range replies {
			seq := replies[i].Header.Seq
			if replies[i].Header.Type != unix.NLMSG_ERROR || seq < firstSeq || seq > w.seq || len(replies[i].Data) < 4 {
				continue
			}
			op := &ops[seq-firstSeq]
			errno := syscall.Errno(-int32(binary.NativeEndian.Uint32(replies[i].Data[:4])))
			if errno != 0 && errno != op.alreadyDone && firstErr == nil {
				firstErr = errors.Wrapf(errno, "%s", op.what)
			}
			if seq == w.seq {
				return firstErr
			}
		}
	}
}

// receive reads one datagram of replies into the connection's buffer and splits it into messages.
func (w *rtnlConn) receive() ([]syscall.NetlinkMessage, error) {
	n, err := w.receiveRaw()
	if err != nil {
		return nil, err
	}
	return syscall.ParseNetlinkMessage(w.buf[:n])
}

// receiveRaw reads one datagram into the connection's buffer, waiting for it at most receiveTimeout.
func (w *rtnlConn) receiveRaw() (int, error) {
	fd := w.socket.GetFd()
	for {
		n, _, err := unix.Recvfrom(fd, w.buf, 0)
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

func appendMessage(buf []byte, op *writeOp, seq uint32, ack bool) []byte {
	flags := unix.NLM_F_REQUEST | op.flags
	if ack {
		flags |= unix.NLM_F_ACK
	}
	header := make([]byte, unix.SizeofNlMsghdr)
	binary.NativeEndian.PutUint32(header[0:4], uint32(unix.SizeofNlMsghdr+len(op.payload)))
	binary.NativeEndian.PutUint16(header[4:6], op.msgType)
	binary.NativeEndian.PutUint16(header[6:8], uint16(flags))
	binary.NativeEndian.PutUint32(header[8:12], seq)
	buf = append(buf, header...)
	return append(buf, op.payload...)
}

// serialize builds an rtmsg-headed payload; every rtnetlink attribute is already 4-byte aligned by RtAttr.
func serialize(msg *nl.RtMsg, attrs ...*nl.RtAttr) []byte {
	payload := msg.Serialize()
	for _, attr := range attrs {
		payload = append(payload, attr.Serialize()...)
	}
	return payload
}

func uint32Attr(attrType int, value uint32) *nl.RtAttr {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, value)
	return nl.NewRtAttr(attrType, b)
}
