package stats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout of the v2 shared header, as govpp's statsclient reads it.
const (
	segmentVersion = 2

	offVersion     = 0
	offBase        = 8
	offEpoch       = 16
	offInProgress  = 24
	offDirVector   = 32
	offErrorVector = 40
	headerSize     = 4096

	dirEntrySize = 144 // int32 type, 4 bytes padding, u64 union, 128-byte name
	nameLen      = 128

	typeSimpleCounter   = 2
	typeCombinedCounter = 3
	typeNameVector      = 4

	// segmentBase is the address the segment claims to be mapped at; clients only use
	// it to turn stored pointers into offsets.
	segmentBase = uint64(1) << 36
)

// Counters are one interface's counters.
type Counters struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	Drops              uint64
}

// Interface is one row of the published table, indexed by sw_if_index.
type Interface struct {
	Name     string
	Counters Counters
}

// Segment is the shared memory VPP exposes its statistics in. It is double-buffered:
// a publish writes the half readers are not pointed at, then flips the directory
// pointer and the epoch, so a reader never follows a half-written pointer.
type Segment struct {
	file *os.File
	mem  []byte
	half int

	mu     sync.Mutex
	active int
	epoch  int64
}

// NewSegment creates a segment able to hold about maxInterfaces interfaces.
func NewSegment(maxInterfaces int) (*Segment, error) {
	half := 4096 + maxInterfaces*(8+nameLen+16*3+8*3) + 64*dirEntrySize
	half = (half + 4095) &^ 4095
	fd, err := unix.MemfdCreate("vppsim-stats", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	file := os.NewFile(uintptr(fd), "vppsim-stats")
	size := headerSize + 2*half
	if err := file.Truncate(int64(size)); err != nil {
		_ = file.Close()
		return nil, err
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("mmap stats segment: %w", err)
	}
	s := &Segment{file: file, mem: mem, half: half}
	binary.LittleEndian.PutUint64(mem[offVersion:], segmentVersion)
	binary.LittleEndian.PutUint64(mem[offBase:], segmentBase)
	binary.LittleEndian.PutUint64(mem[offErrorVector:], 0)
	if err := s.Publish(nil); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// File is the memory file handed to clients.
func (s *Segment) File() *os.File { return s.file }

// Close unmaps the segment; clients keep their own mappings.
func (s *Segment) Close() error {
	return errors.Join(unix.Munmap(s.mem), s.file.Close())
}

func (s *Segment) word(off int) *int64 {
	return (*int64)(unsafe.Pointer(&s.mem[off]))
}

// Publish replaces the directory with the given interfaces (index = sw_if_index).
func (s *Segment) Publish(ifaces []Interface) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := 1 - s.active
	w := &writer{mem: s.mem, start: headerSize + next*s.half, end: headerSize + (next+1)*s.half}
	w.next = w.start
	dir, err := w.directory(ifaces)
	if err != nil {
		return err
	}
	atomic.StoreInt64(s.word(offInProgress), 1)
	atomic.StoreInt64(s.word(offDirVector), int64(dir))
	s.epoch++
	atomic.StoreInt64(s.word(offEpoch), s.epoch)
	atomic.StoreInt64(s.word(offInProgress), 0)
	s.active = next
	return nil
}

// writer lays out VPP vectors (a u64 length followed by the elements) in one half.
type writer struct {
	mem              []byte
	start, end, next int
}

var errFull = errors.New("stats segment full")

// vector reserves a vector of n elements of size bytes and returns the offset of its
// first element, which is what VPP's pointers point at.
func (w *writer) vector(n, size int) (int, error) {
	need := 8 + n*size
	need = (need + 7) &^ 7
	if w.next+need+8 > w.end {
		return 0, errFull
	}
	binary.LittleEndian.PutUint64(w.mem[w.next:], uint64(n))
	data := w.next + 8
	clear(w.mem[data : data+n*size])
	w.next += need
	return data, nil
}

func pointer(off int) uint64 { return segmentBase + uint64(off) }

func (w *writer) directory(ifaces []Interface) (uint64, error) {
	type column struct {
		name     string
		kind     int32
		simple   func(Counters) uint64
		combined func(Counters) (uint64, uint64)
	}
	columns := []column{
		{name: "/if/names", kind: typeNameVector},
		{name: "/if/rx", kind: typeCombinedCounter, combined: func(c Counters) (uint64, uint64) { return c.RxPackets, c.RxBytes }},
		{name: "/if/tx", kind: typeCombinedCounter, combined: func(c Counters) (uint64, uint64) { return c.TxPackets, c.TxBytes }},
		{name: "/if/drops", kind: typeSimpleCounter, simple: func(c Counters) uint64 { return c.Drops }},
	}
	dir, err := w.vector(len(columns), dirEntrySize)
	if err != nil {
		return 0, err
	}
	for n, col := range columns {
		var data int
		switch col.kind {
		case typeNameVector:
			data, err = w.names(ifaces)
		case typeCombinedCounter:
			data, err = w.perThread(len(ifaces), 16, func(elem []byte, i int) {
				packets, bytes := col.combined(ifaces[i].Counters)
				binary.LittleEndian.PutUint64(elem, packets)
				binary.LittleEndian.PutUint64(elem[8:], bytes)
			})
		case typeSimpleCounter:
			data, err = w.perThread(len(ifaces), 8, func(elem []byte, i int) {
				binary.LittleEndian.PutUint64(elem, col.simple(ifaces[i].Counters))
			})
		}
		if err != nil {
			return 0, err
		}
		entry := w.mem[dir+n*dirEntrySize : dir+(n+1)*dirEntrySize]
		binary.LittleEndian.PutUint32(entry[0:], uint32(col.kind))
		binary.LittleEndian.PutUint64(entry[8:], pointer(data))
		copy(entry[16:16+nameLen-1], col.name)
	}
	return pointer(dir), nil
}

// perThread writes VPP's counter layout: a vector with one pointer per worker thread (the
// simulator has one), each to a vector of per-interface elements.
func (w *writer) perThread(n, size int, fill func(elem []byte, i int)) (int, error) {
	threads, err := w.vector(1, 8)
	if err != nil {
		return 0, err
	}
	counters, err := w.vector(n, size)
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		fill(w.mem[counters+i*size:counters+(i+1)*size], i)
	}
	binary.LittleEndian.PutUint64(w.mem[threads:], pointer(counters))
	return threads, nil
}

// names writes a vector of pointers to NUL-terminated name vectors.
func (w *writer) names(ifaces []Interface) (int, error) {
	list, err := w.vector(len(ifaces), 8)
	if err != nil {
		return 0, err
	}
	for i, iface := range ifaces {
		name, err := w.vector(len(iface.Name)+1, 1)
		if err != nil {
			return 0, err
		}
		copy(w.mem[name:], iface.Name)
		binary.LittleEndian.PutUint64(w.mem[list+i*8:], pointer(name))
	}
	return list, nil
}
