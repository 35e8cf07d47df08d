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

// Egress is one place the configuration sends a packet.
type Egress struct {
	// SwIfIndex is the interface whose port transmits: for a VLAN sub-interface, its
	// parent, with PushVlan set to the sub-interface's VLAN.
	SwIfIndex uint32
	PushVlan  uint16
	// SrcMAC and DstMAC are used when an IP packet leaves through an Ethernet port;
	// a nil DstMAC means broadcast.
	SrcMAC net.HardwareAddr
	DstMAC net.HardwareAddr
	// Routed marks an IP packet forwarded at L3 (l3xc): leaving through an Ethernet port it
	// gets a new Ethernet header even when it arrived on one.
	Routed bool
}

// Frame is a packet as received: on an Ethernet port (L2) or a tun (L3). IP is the IP
// packet it carries, nil if it carries something else.
type Frame struct {
	Layer Layer
	Data  []byte
	IP    []byte
}

// Forwarder is the VPP configuration as the packet path sees it.
type Forwarder interface {
	// Forward lists where a frame received on rx goes (several places when a bridge
	// floods); none means it is dropped.
	Forward(rx uint32, frame Frame) []Egress
	// SubInterface finds the VLAN sub-interface of parent that takes frames tagged vlan.
	SubInterface(parent uint32, vlan uint16) (uint32, bool)
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
	if rp, ok := pt.(readablePort); ok {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.readLoop(swIfIndex, rp)
		}()
	}
}

// readablePort is a port with its own file to read packets from (VXLAN tunnels share an
// endpoint socket and are fed by it instead).
type readablePort interface {
	port
	read(buf []byte) (int, error)
}

func (p *Plane) readLoop(swIfIndex uint32, rp readablePort) {
	buf := make([]byte, maxPacket)
	for {
		n, err := rp.read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				p.log.Debug("port read ended", "sw_if_index", swIfIndex, "error", err)
			}
			return
		}
		p.receive(swIfIndex, rp.layer(), buf[:n])
	}
}

// receive forwards one packet that arrived on rx's port, counting it as VPP would:
// received on rx, then transmitted on each egress port or dropped on rx. A frame tagged
// with a VLAN that a sub-interface of rx takes is received, untagged, on that
// sub-interface.
func (p *Plane) receive(rx uint32, layer Layer, pkt []byte) {
	p.mu.RLock()
	rxCounters := p.counters[rx]
	p.mu.RUnlock()
	if rxCounters != nil {
		rxCounters.rxPackets.Add(1)
		rxCounters.rxBytes.Add(uint64(len(pkt)))
	}
	if layer == L2 {
		if vlan, ok := vlanTag(pkt); ok {
			if sub, ok := p.forwarder.SubInterface(rx, vlan); ok {
				rx, pkt = sub, popVlan(pkt)
			}
		}
	}
	frame := Frame{Layer: layer, Data: pkt, IP: ipPart(layer, pkt)}
	sent := 0
	for _, out := range p.forwarder.Forward(rx, frame) {
		if p.transmit(frame, out) {
			sent++
		}
	}
	if sent == 0 && rxCounters != nil {
		rxCounters.drops.Add(1)
	}
}

func (p *Plane) transmit(frame Frame, out Egress) bool {
	p.mu.RLock()
	tx, ok := p.ports[out.SwIfIndex]
	txCounters := p.counters[out.SwIfIndex]
	p.mu.RUnlock()
	if !ok {
		return false
	}
	data := convert(frame.Layer, tx.layer(), frame.Data, frame.IP, out)
	if data == nil {
		return false
	}
	if out.PushVlan != 0 {
		if tx.layer() != L2 {
			return false
		}
		data = pushVlan(data, out.PushVlan)
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

const etherTypeVlan = 0x8100

func vlanTag(frame []byte) (uint16, bool) {
	if len(frame) < 18 || binary.BigEndian.Uint16(frame[12:14]) != etherTypeVlan {
		return 0, false
	}
	return binary.BigEndian.Uint16(frame[14:16]) & 0x0fff, true
}

func popVlan(frame []byte) []byte {
	out := make([]byte, len(frame)-4)
	copy(out, frame[:12])
	copy(out[12:], frame[16:])
	return out
}

func pushVlan(frame []byte, vlan uint16) []byte {
	if len(frame) < 14 {
		return frame
	}
	out := make([]byte, len(frame)+4)
	copy(out, frame[:12])
	binary.BigEndian.PutUint16(out[12:14], etherTypeVlan)
	binary.BigEndian.PutUint16(out[14:16], vlan&0x0fff)
	copy(out[16:], frame[12:])
	return out
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
	case from == to && !(to == L2 && out.Routed && ipHeader != nil):
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

func (f *filePort) read(buf []byte) (int, error) { return f.file.Read(buf) }

func (f *filePort) write(pkt []byte) error {
	_, err := f.file.Write(pkt)
	return err
}

func (f *filePort) close() error { return f.file.Close() }
