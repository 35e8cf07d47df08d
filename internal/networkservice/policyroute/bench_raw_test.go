package policyroute

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// The raw baseline is the kernel's own cost of what an install writes: one route and one rule per policy,
// framed by hand and sent in batches of rawBatch messages with one acknowledgement per batch, without
// reading the namespace first. The server cannot go below it; how far above it the server stays is what
// reading, deciding and keeping the view cost.
const rawBatch = 128

// rawWrite is one route or rule message of the baseline.
type rawWrite struct {
	msgType, flags uint16
	payload        []byte
}

// rawWrites builds, per connection, its policies' routes and then their rules in descending priority, as
// the server orders a plan; deletes are the same messages in reverse, to leave the namespace as it was.
func rawWrites(shape benchShape, links []int) (adds, deletes []rawWrite) {
	o := newOptions(nil)
	policies, err := parsePolicies(manyPolicies(shape.connections * shape.policies))
	if err != nil {
		panic(err)
	}
	priority := map[uint8]uint32{unix.AF_INET: o.lastPriority(), unix.AF_INET6: o.lastPriority()}
	for c := range shape.connections {
		var rules []rawWrite
		for i := c * shape.policies; i < (c+1)*shape.policies; i++ {
			p, table := &policies[i], o.firstTable+uint32(i)
			for _, r := range p.routes {
				route := rawRoute(table, r.dst, r.gw, links[c])
				adds = append(adds, rawWrite{unix.RTM_NEWROUTE, unix.NLM_F_CREATE | unix.NLM_F_EXCL, route})
				deletes = append(deletes, rawWrite{unix.RTM_DELROUTE, 0, route})
			}
			for _, family := range p.families {
				rule := rawRule(family, table, priority[family], p.sel)
				priority[family]--
				rules = append(rules, rawWrite{unix.RTM_NEWRULE, unix.NLM_F_CREATE, rule})
				deletes = append(deletes, rawWrite{unix.RTM_DELRULE, 0, rule})
			}
		}
		adds = append(adds, rules...)
	}
	for i, j := 0, len(deletes)-1; i < j; i, j = i+1, j-1 {
		deletes[i], deletes[j] = deletes[j], deletes[i]
	}
	return adds, deletes
}

func rawRoute(table uint32, dst netip.Prefix, gw netip.Addr, oif int) []byte {
	b := make([]byte, unix.SizeofRtMsg)
	b[0], b[1] = routeview.FamilyOf(dst.Addr()), uint8(dst.Bits())
	b[5], b[6], b[7] = defaultProtocol, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST
	b = rawAttr(b, unix.RTA_TABLE, binary.NativeEndian.AppendUint32(nil, table))
	b = rawAttr(b, unix.RTA_DST, dst.Addr().AsSlice())
	b = rawAttr(b, unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(oif)))
	if gw.IsValid() {
		binary.NativeEndian.PutUint32(b[8:12], unix.RTNH_F_ONLINK)
		b = rawAttr(b, unix.RTA_GATEWAY, gw.AsSlice())
	}
	return rawAttr(b, unix.RTA_PRIORITY, binary.NativeEndian.AppendUint32(nil, table))
}

func rawRule(family uint8, table, priority uint32, sel selector) []byte {
	b := make([]byte, 12)  // struct fib_rule_hdr
	b[0], b[7] = family, 1 // FR_ACT_TO_TBL
	b = rawAttr(b, unix.FRA_PRIORITY, binary.NativeEndian.AppendUint32(nil, priority))
	b = rawAttr(b, unix.FRA_TABLE, binary.NativeEndian.AppendUint32(nil, table))
	b = rawAttr(b, unix.FRA_PROTOCOL, []byte{defaultProtocol})
	if sel.Src.IsValid() {
		b[2] = uint8(sel.Src.Bits())
		b = rawAttr(b, unix.FRA_SRC, sel.Src.Addr().AsSlice())
	}
	if sel.Proto != 0 {
		b = rawAttr(b, unix.FRA_IP_PROTO, []byte{sel.Proto})
	}
	b = rawPortRange(b, unix.FRA_SPORT_RANGE, sel.Sport)
	return rawPortRange(b, unix.FRA_DPORT_RANGE, sel.Dport)
}

func rawPortRange(b []byte, attrType uint16, r routeview.PortRange) []byte {
	if r == (routeview.PortRange{}) {
		return b
	}
	return rawAttr(b, attrType, binary.NativeEndian.AppendUint16(binary.NativeEndian.AppendUint16(nil, r.Start), r.End))
}

func rawAttr(b []byte, attrType uint16, value []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(unix.SizeofRtAttr+len(value)))
	b = binary.NativeEndian.AppendUint16(b, attrType)
	b = append(b, value...)
	for len(b)%unix.RTA_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// rawSend writes every message in batches; the last of each batch asks for the acknowledgement that
// ends the batch's replies. It fails on the first error the kernel reports.
func rawSend(tb testing.TB, fd int, writes []rawWrite) {
	tb.Helper()
	seq := uint32(0)
	buf := make([]byte, 1<<20)
	for start := 0; start < len(writes); start += rawBatch {
		batch := writes[start:min(start+rawBatch, len(writes))]
		var msgs []byte
		for i, w := range batch {
			seq++
			flags := unix.NLM_F_REQUEST | w.flags
			if i == len(batch)-1 {
				flags |= unix.NLM_F_ACK
			}
			msgs = binary.NativeEndian.AppendUint32(msgs, uint32(unix.SizeofNlMsghdr+len(w.payload)))
			msgs = binary.NativeEndian.AppendUint16(msgs, w.msgType)
			msgs = binary.NativeEndian.AppendUint16(msgs, flags)
			msgs = binary.NativeEndian.AppendUint32(msgs, seq)
			msgs = binary.NativeEndian.AppendUint32(msgs, 0)
			msgs = append(msgs, w.payload...)
		}
		require.NoError(tb, unix.Sendto(fd, msgs, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
		for acked := false; !acked; {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			require.NoError(tb, err)
			replies, err := syscall.ParseNetlinkMessage(buf[:n])
			require.NoError(tb, err)
			for _, m := range replies {
				if m.Header.Type != unix.NLMSG_ERROR {
					continue
				}
				errno := unix.Errno(-int32(binary.NativeEndian.Uint32(m.Data[:4])))
				require.Zero(tb, errno, "message %d: %v", m.Header.Seq, errno)
				acked = acked || m.Header.Seq == seq
			}
		}
	}
}

// benchRawInstall measures the raw baseline of a shape in one namespace, which every iteration leaves as
// it found it.
func benchRawInstall(b *testing.B, shape benchShape) {
	b.StopTimer()
	n := newShapeNamespace(b, shape)
	links := make([]int, shape.connections)
	for c := range links {
		l, err := n.handle.LinkByName(fmt.Sprint("nsm", c))
		require.NoError(b, err)
		links[c] = l.Attrs().Index
	}
	adds, deletes := rawWrites(shape, links)
	socket, err := nl.GetNetlinkSocketAt(n.ns, netns.None(), unix.NETLINK_ROUTE)
	require.NoError(b, err)
	defer socket.Close()
	require.NoError(b, unix.SetsockoptInt(socket.GetFd(), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 1<<20))
	var elapsed cost
	for range b.N {
		elapsed.add(measure(func() { rawSend(b, socket.GetFd(), adds) }))
		rawSend(b, socket.GetFd(), deletes)
		require.Empty(b, n.snapshot(b, newOptions(nil)), "the deletes must leave the namespace as it was")
	}
	reportPerPolicy(b, elapsed, shape)
}
