package routeview

import (
	"strconv"
	"syscall"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
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
	c *netlink.Conn
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
	var firstErr error
	fail := func(op *Op, err error) {
		if firstErr == nil {
			firstErr = errors.Wrapf(err, "%s", op.what)
		}
	}
	msgs := make([]netlink.Message, 0, len(ops))
	sent := make([]*Op, 0, len(ops))
	for i := range ops {
		if ops[i].err != nil {
			// What cannot be encoded fails where the kernel would have refused it, in order.
			fail(&ops[i], ops[i].err)
			continue
		}
		msgs = append(msgs, netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(ops[i].msgType), Flags: netlink.Request | ops[i].flags},
			Data:   ops[i].payload,
		})
		sent = append(sent, &ops[i])
	}
	if len(msgs) == 0 {
		return firstErr
	}
	msgs[len(msgs)-1].Header.Flags |= netlink.Acknowledge
	msgs, err := c.c.SendMessages(msgs)
	if err != nil {
		return errors.Wrap(err, "failed to send netlink batch")
	}
	firstSeq, lastSeq := msgs[0].Header.Sequence, msgs[len(msgs)-1].Header.Sequence
	err = c.receive(func(replies []netlink.Message, replyErr *netlink.OpError) bool {
		if replyErr != nil {
			// The kernel reports each failure as an error message of its own, with the write's sequence.
			i := int(replyErr.Sequence - firstSeq)
			if i < 0 || i >= len(sent) {
				return true
			}
			if errno, _ := replyErr.Err.(syscall.Errno); errno != sent[i].alreadyDone {
				fail(sent[i], replyErr.Err)
			}
			return replyErr.Sequence != lastSeq
		}
		for _, m := range replies {
			if m.Header.Type == netlink.Error && m.Header.Sequence == lastSeq {
				return false
			}
		}
		return true
	})
	if err != nil {
		return errors.Wrap(err, "failed to receive netlink replies")
	}
	return firstErr
}

// receive hands what each datagram brings to handle, the messages or the error one reports, until handle
// returns false or receiveTimeout passes.
func (c *requestConn) receive(handle func(replies []netlink.Message, replyErr *netlink.OpError) bool) error {
	if err := c.c.SetReadDeadline(time.Now().Add(receiveTimeout)); err != nil {
		return err
	}
	for {
		replies, err := c.c.Receive()
		var replyErr *netlink.OpError
		if err != nil && (!errors.As(err, &replyErr) || replyErr.Sequence == 0) {
			return err
		}
		if !handle(replies, replyErr) {
			return nil
		}
	}
}

// dump sends a dump request and hands each reply of it to each until the kernel is done. It reports an
// interrupted dump as errDumpInterrupted, after reading it to the end.
func (c *requestConn) dump(msgType uint16, payload []byte, each func(msgType uint16, payload []byte)) error {
	sent, err := c.c.Send(netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(msgType), Flags: netlink.Request | netlink.Dump}, Data: payload})
	if err != nil {
		return err
	}
	seq := sent.Header.Sequence
	var result error
	interrupted := false
	err = c.receive(func(replies []netlink.Message, replyErr *netlink.OpError) bool {
		if replyErr != nil {
			if replyErr.Sequence != seq {
				return true
			}
			result = replyErr.Err
			return false
		}
		// Receive gathers every part of a dump and leaves out its done message, so an empty dump brings none.
		done := len(replies) == 0
		for _, m := range replies {
			if m.Header.Sequence != seq {
				continue
			}
			done = true
			interrupted = interrupted || m.Header.Flags&netlink.DumpInterrupted != 0
			if m.Header.Type != netlink.Done && m.Header.Type != netlink.Error {
				each(uint16(m.Header.Type), m.Data)
			}
		}
		return !done
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
	header, err := (&rtnetlink.LinkMessage{}).MarshalBinary()
	if err != nil {
		return found, err
	}
	// Longer names can only be alternative names, which the kernel looks up by an attribute of their own
	// that the library's LinkAttributes do not encode.
	attrType := uint16(unix.IFLA_IFNAME)
	if len(name) >= unix.IFNAMSIZ {
		attrType = unix.IFLA_ALT_IFNAME
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(attrType, name)
	attributes, err := ae.Encode()
	if err != nil {
		return found, err
	}
	payload := append(header, attributes...)
	sent, err := c.c.Send(netlink.Message{Header: netlink.Header{Type: unix.RTM_GETLINK, Flags: netlink.Request}, Data: payload})
	if err != nil {
		return found, err
	}
	ok := false
	recvErr := c.receive(func(replies []netlink.Message, replyErr *netlink.OpError) bool {
		if replyErr != nil {
			if replyErr.Sequence != sent.Header.Sequence {
				return true
			}
			err = replyErr.Err
			return false
		}
		for _, m := range replies {
			if m.Header.Sequence == sent.Header.Sequence && m.Header.Type == unix.RTM_NEWLINK {
				found, ok = parseLink(m.Data)
				return false
			}
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
	return c.writeBatch([]Op{newOp(unix.RTM_NEWLINK, 0, &rtnetlink.LinkMessage{Index: uint32(index), Flags: unix.IFF_UP, Change: unix.IFF_UP}, 0, linkName(index))})
}

type linkName int

func (l linkName) String() string { return "link " + strconv.Itoa(int(l)) }
