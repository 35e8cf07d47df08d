package dataplane

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// Layer is what a port carries: Ethernet frames or bare IP packets.
type Layer int

// Port layers.
const (
	L2 Layer = iota
	L3
)

const maxPacket = 65536

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Egress is where the configuration sends a packet.
type Egress struct {
	SwIfIndex uint32
	// SrcMAC and DstMAC are used when an IP packet leaves through an Ethernet port;
	// a nil DstMAC means broadcast.
	SrcMAC net.HardwareAddr
	DstMAC net.HardwareAddr
}

// Forwarder is the VPP configuration as the packet path sees it.
type Forwarder interface {
	// Forward says where a packet received on rx goes; ok is false to drop it. ip is the
	// packet's IP header when it carries IP (nil otherwise).
	Forward(rx uint32, ip []byte) (out Egress, ok bool)
}

type port interface {
	layer() Layer
	write(pkt []byte) error
	close() error
}

// Plane owns the ports and moves packets between them.
type Plane struct {
	ownNetns  string
	forwarder Forwarder
	log       *slog.Logger

	mu        sync.RWMutex
	ports     map[uint32]port
	counters  map[uint32]*portCounters
	endpoints map[endpointKey]*vxlanEndpoint
	wg        sync.WaitGroup
}

// New creates an empty plane. ownNetns is the namespace (path) the simulator lives in for
// af_packet and VXLAN sockets; empty means the process's own.
func New(ownNetns string, forwarder Forwarder, log *slog.Logger) *Plane {
	return &Plane{
		ownNetns:  ownNetns,
		forwarder: forwarder,
		log:       log,
		ports:     make(map[uint32]port),
		counters:  make(map[uint32]*portCounters),
		endpoints: make(map[endpointKey]*vxlanEndpoint),
	}
}

// RemovePort closes swIfIndex's port (removing a tap's host interface); unknown indexes
// are ignored since not every interface has a port.
func (p *Plane) RemovePort(swIfIndex uint32) {
	p.mu.Lock()
	pt, ok := p.ports[swIfIndex]
	delete(p.ports, swIfIndex)
	delete(p.counters, swIfIndex)
	p.mu.Unlock()
	if ok {
		if err := pt.close(); err != nil {
			p.log.Warn("closing port", "sw_if_index", swIfIndex, "error", err)
		}
	}
}

// HasPort says whether swIfIndex has a kernel side.
func (p *Plane) HasPort(swIfIndex uint32) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.ports[swIfIndex]
	return ok
}

// Close removes every port and waits for the readers to stop.
func (p *Plane) Close() {
	p.mu.Lock()
	ports := p.ports
	p.ports = make(map[uint32]port)
	p.mu.Unlock()
	for _, pt := range ports {
		_ = pt.close()
	}
	p.wg.Wait()
}

func (p *Plane) addPort(swIfIndex uint32, pt port) {
	p.mu.Lock()
	p.ports[swIfIndex] = pt
	p.counters[swIfIndex] = &portCounters{}
	p.mu.Unlock()
	if fp, ok := pt.(*filePort); ok {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.readLoop(swIfIndex, fp)
		}()
	}
}

func (p *Plane) readLoop(swIfIndex uint32, fp *filePort) {
	buf := make([]byte, maxPacket)
	for {
		n, err := fp.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				p.log.Debug("port read ended", "sw_if_index", swIfIndex, "error", err)
			}
			return
		}
		p.receive(swIfIndex, fp.carries, buf[:n])
	}
}

// receive forwards one packet that arrived on rx, counting it as VPP would: received on
// rx, then either transmitted on the egress port or dropped on rx.
func (p *Plane) receive(rx uint32, layer Layer, pkt []byte) {
	p.mu.RLock()
	rxCounters := p.counters[rx]
	p.mu.RUnlock()
	if rxCounters != nil {
		rxCounters.rxPackets.Add(1)
		rxCounters.rxBytes.Add(uint64(len(pkt)))
	}
	if !p.forward(rx, layer, pkt) && rxCounters != nil {
		rxCounters.drops.Add(1)
	}
}

func (p *Plane) forward(rx uint32, layer Layer, pkt []byte) bool {
	ipHeader := ipPart(layer, pkt)
	out, ok := p.forwarder.Forward(rx, ipHeader)
	if !ok {
		return false
	}
	p.mu.RLock()
	tx, ok := p.ports[out.SwIfIndex]
	txCounters := p.counters[out.SwIfIndex]
	p.mu.RUnlock()
	if !ok {
		return false
	}
	data := convert(layer, tx.layer(), pkt, ipHeader, out)
	if data == nil {
		return false
	}
	if err := tx.write(data); err != nil {
		p.log.Debug("port write failed", "sw_if_index", out.SwIfIndex, "error", err)
		return false
	}
	if txCounters != nil {
		txCounters.txPackets.Add(1)
		txCounters.txBytes.Add(uint64(len(data)))
	}
	return true
}

// ipPart returns the IP packet inside pkt, or nil if it carries something else.
func ipPart(layer Layer, pkt []byte) []byte {
	if layer == L3 {
		if len(pkt) > 0 && (pkt[0]>>4 == 4 || pkt[0]>>4 == 6) {
			return pkt
		}
		return nil
	}
	if len(pkt) < 14 {
		return nil
	}
	switch binary.BigEndian.Uint16(pkt[12:14]) {
	case 0x0800, 0x86dd:
		return pkt[14:]
	}
	return nil
}

// convert adapts a packet to the egress port: Ethernet frames lose their header on the
// way into a tun, IP packets gain one on the way into an Ethernet port.
func convert(from, to Layer, pkt, ipHeader []byte, out Egress) []byte {
	switch {
	case from == to:
		return pkt
	case from == L2 && to == L3:
		return ipHeader
	}
	if ipHeader == nil {
		return nil
	}
	dst := out.DstMAC
	if dst == nil {
		dst = broadcastMAC
	}
	frame := make([]byte, 14+len(ipHeader))
	copy(frame[0:6], dst)
	copy(frame[6:12], out.SrcMAC)
	etherType := uint16(0x0800)
	if ipHeader[0]>>4 == 6 {
		etherType = 0x86dd
	}
	binary.BigEndian.PutUint16(frame[12:14], etherType)
	copy(frame[14:], ipHeader)
	return frame
}

// Counters are a port's packet counters since it was created.
type Counters struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	Drops              uint64
}

type portCounters struct {
	rxPackets, rxBytes, txPackets, txBytes, drops atomic.Uint64
}

// Counters returns swIfIndex's counters; interfaces without a port have none.
func (p *Plane) Counters(swIfIndex uint32) Counters {
	p.mu.RLock()
	c := p.counters[swIfIndex]
	p.mu.RUnlock()
	if c == nil {
		return Counters{}
	}
	return Counters{
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(),
		Drops: c.drops.Load(),
	}
}

// filePort is a tap, tun or af_packet socket: one read or write per packet.
type filePort struct {
	file    *os.File
	carries Layer
}

func (f *filePort) layer() Layer { return f.carries }

func (f *filePort) write(pkt []byte) error {
	_, err := f.file.Write(pkt)
	return err
}

func (f *filePort) close() error { return f.file.Close() }
