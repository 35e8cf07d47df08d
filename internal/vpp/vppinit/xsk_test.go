package vppinit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// xsk is a minimal AF_XDP socket on one receive queue, in copy mode: what VPP's af_xdp plugin
// opens on the uplink, reduced to receiving. Frames the XDP program redirects to it land in its
// RX ring; frames it passes go to the kernel instead.
type xsk struct {
	fd      int
	umem    []byte
	rxMem   []byte
	fillMem []byte
	rx      ring
}

// ring is one mmapped AF_XDP ring: producer and consumer indexes and the descriptors.
type ring struct {
	producer, consumer *uint32
	descs              unsafe.Pointer
	size               uint32
}

const (
	xskFrames    = 64
	xskFrameSize = 4096
)

// newXSK binds an AF_XDP socket to queue 0 of the link ifindex, in the current namespace, with
// every frame of its UMEM offered to the kernel through the fill ring.
func newXSK(t *testing.T, ifindex int) *xsk {
	t.Helper()
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW, 0)
	require.NoError(t, err, "AF_XDP socket")
	s := &xsk{fd: fd}
	t.Cleanup(s.close)

	s.umem, err = unix.Mmap(-1, 0, xskFrames*xskFrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: xskFrameSize}
	require.NoError(t, setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)), "XDP_UMEM_REG")
	for _, option := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		size := uint32(xskFrames)
		require.NoError(t, setsockopt(fd, option, unsafe.Pointer(&size), unsafe.Sizeof(size)))
	}
	var offsets unix.XDPMmapOffsets
	length := uint32(unsafe.Sizeof(offsets))
	if _, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&offsets)), uintptr(unsafe.Pointer(&length)), 0); errno != 0 {
		require.NoError(t, errno, "XDP_MMAP_OFFSETS")
	}

	var fill ring
	s.rxMem, s.rx = s.mapRing(t, unix.XDP_PGOFF_RX_RING, offsets.Rx, unsafe.Sizeof(unix.XDPDesc{}))
	s.fillMem, fill = s.mapRing(t, unix.XDP_UMEM_PGOFF_FILL_RING, offsets.Fr, unsafe.Sizeof(uint64(0)))
	for i := range uint32(xskFrames) {
		*(*uint64)(unsafe.Add(fill.descs, uintptr(i)*8)) = uint64(i) * xskFrameSize
	}
	atomic.StoreUint32(fill.producer, xskFrames)

	require.NoError(t, unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: 0}), "binding the AF_XDP socket")
	return s
}

func (s *xsk) mapRing(t *testing.T, pgoff int64, offset unix.XDPRingOffset, descSize uintptr) ([]byte, ring) {
	t.Helper()
	mem, err := unix.Mmap(s.fd, pgoff, int(offset.Desc)+xskFrames*int(descSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	require.NoError(t, err)
	base := unsafe.Pointer(&mem[0])
	return mem, ring{
		producer: (*uint32)(unsafe.Add(base, offset.Producer)),
		consumer: (*uint32)(unsafe.Add(base, offset.Consumer)),
		descs:    unsafe.Add(base, offset.Desc),
		size:     xskFrames,
	}
}

// receive returns the frames that arrived since the last call. The test only ever receives
// fewer frames than the fill ring holds, so frames are not handed back to the kernel.
func (s *xsk) receive() [][]byte {
	var frames [][]byte
	producer := atomic.LoadUint32(s.rx.producer)
	consumer := atomic.LoadUint32(s.rx.consumer)
	for ; consumer != producer; consumer++ {
		desc := (*unix.XDPDesc)(unsafe.Add(s.rx.descs, uintptr(consumer%s.rx.size)*unsafe.Sizeof(unix.XDPDesc{})))
		frames = append(frames, append([]byte(nil), s.umem[desc.Addr:desc.Addr+uint64(desc.Len)]...))
	}
	atomic.StoreUint32(s.rx.consumer, consumer)
	return frames
}

func (s *xsk) close() {
	for _, mem := range [][]byte{s.rxMem, s.fillMem, s.umem} {
		if mem != nil {
			_ = unix.Munmap(mem)
		}
	}
	_ = unix.Close(s.fd)
}

func setsockopt(fd, option int, value unsafe.Pointer, size uintptr) error {
	if _, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(option), uintptr(value), size, 0); errno != 0 {
		return fmt.Errorf("setsockopt(SOL_XDP, %d): %w", option, errno)
	}
	return nil
}

// packetTap is an AF_PACKET socket on one link: it sees the frames the kernel received on it
// (after XDP, which runs first) and, marked outgoing, the ones the link sent.
type packetTap struct{ fd int }

func newPacketTap(t *testing.T, ifindex int) *packetTap {
	t.Helper()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK, int(htons(unix.ETH_P_ALL)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}))
	return &packetTap{fd: fd}
}

// send writes a whole Ethernet frame on the tap's link.
func (p *packetTap) send(frame []byte) error {
	_, err := unix.Write(p.fd, frame)
	return err
}

// received returns the frames the kernel received since the last call (not those sent).
func (p *packetTap) received() [][]byte {
	var frames [][]byte
	buf := make([]byte, 65536)
	for {
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil {
			return frames
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		frames = append(frames, append([]byte(nil), buf[:n]...))
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// settle gives the frames just sent time to cross the veth and the XDP program.
func settle() { time.Sleep(200 * time.Millisecond) }
