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
	// batchSize bounds the messages in flight so their acknowledgements fit the socket's receive buffer;
	// the kernel drops acknowledgements that do not fit.
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

// batchWriter sends many rtnetlink writes per sendmsg and then collects their acknowledgements, instead of one
// round trip per write: the kernel processes every message of a buffer in order and acknowledges each.
type batchWriter struct {
	socket *nl.NetlinkSocket
	seq    uint32
}

func newBatchWriter(socket *nl.NetlinkSocket) *batchWriter {
	_ = unix.SetsockoptInt(socket.GetFd(), unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	_ = socket.SetExtAck(true)
	_ = socket.SetReceiveTimeout(&unix.Timeval{Sec: int64(receiveTimeout / time.Second)})
	return &batchWriter{socket: socket}
}

func (w *batchWriter) Close() {
	w.socket.Close()
}

// write applies ops in order and returns the first failure; later ops of the same batch are still attempted
// by the kernel, so callers order ops so that a failure never leaves policy traffic without a table.
func (w *batchWriter) write(ops []writeOp) error {
	var firstErr error
	for start := 0; start < len(ops); start += batchSize {
		end := min(start+batchSize, len(ops))
		if err := w.writeBatch(ops[start:end]); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (w *batchWriter) writeBatch(ops []writeOp) error {
	firstSeq := w.seq + 1
	var buf []byte
	for i := range ops {
		w.seq++
		buf = appendMessage(buf, &ops[i], w.seq)
	}
	if err := unix.Sendto(w.socket.GetFd(), buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return errors.Wrap(err, "failed to send netlink batch")
	}

	var firstErr error
	for acked := 0; acked < len(ops); {
		msgs, _, err := w.socket.Receive()
		if err != nil {
			return errors.Wrapf(err, "failed to receive netlink acknowledgements (%d of %d)", acked, len(ops))
		}
		for i := range msgs {
			seq := msgs[i].Header.Seq
			if msgs[i].Header.Type != unix.NLMSG_ERROR || seq < firstSeq || seq >= firstSeq+uint32(len(ops)) {
				continue
			}
			acked++
			op := &ops[seq-firstSeq]
			errno := syscall.Errno(-int32(binary.NativeEndian.Uint32(msgs[i].Data[:4])))
			if errno != 0 && errno != op.alreadyDone && firstErr == nil {
				firstErr = errors.Wrapf(errno, "%s", op.what)
			}
		}
	}
	return firstErr
}

func appendMessage(buf []byte, op *writeOp, seq uint32) []byte {
	header := make([]byte, unix.SizeofNlMsghdr)
	binary.NativeEndian.PutUint32(header[0:4], uint32(unix.SizeofNlMsghdr+len(op.payload)))
	binary.NativeEndian.PutUint16(header[4:6], op.msgType)
	binary.NativeEndian.PutUint16(header[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK|op.flags)
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
