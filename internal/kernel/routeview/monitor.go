package routeview

import (
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// drainSlots is how many notifications one receive takes: every write produces one, and a receive per
	// notification would cost as much as the write itself.
	drainSlots = 32
	// drainSlotSize holds any rule, route or address notification and every link notification but those of
	// links with very many attributes; a longer one is truncated and makes the view rebuild itself.
	drainSlotSize = 8 << 10
)

// mmsghdr is struct mmsghdr: a message header and the length the kernel received into it.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

// drainBuffer is what one recvmmsg fills; views share a pool of them, only a syncing view needs one.
type drainBuffer struct {
	msgs []mmsghdr
	iovs []unix.Iovec
	data []byte
}

var drainBuffers = sync.Pool{New: func() any {
	b := &drainBuffer{msgs: make([]mmsghdr, drainSlots), iovs: make([]unix.Iovec, drainSlots), data: make([]byte, drainSlots*drainSlotSize)}
	for i := range b.msgs {
		b.iovs[i].Base = &b.data[i*drainSlotSize]
		b.iovs[i].SetLen(drainSlotSize)
		b.msgs[i].hdr.Iov = &b.iovs[i]
		b.msgs[i].hdr.SetIovlen(1)
	}
	return b
}}

// receive takes every notification queued on fd, up to drainSlots, without waiting.
func (b *drainBuffer) receive(fd int) (int, error) {
	for i := range b.msgs {
		b.msgs[i].len = 0
		b.msgs[i].hdr.Flags = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), unix.MSG_DONTWAIT, 0, 0)
	runtime.KeepAlive(b)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// message returns the i-th datagram received and whether it was cut short.
func (b *drainBuffer) message(i int) (datagram []byte, truncated bool) {
	return b.data[i*drainSlotSize : i*drainSlotSize+int(b.msgs[i].len)], b.msgs[i].hdr.Flags&unix.MSG_TRUNC != 0
}
