package dataplane

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultVxlanPort is the IANA VXLAN port VPP uses when a tunnel names none.
const DefaultVxlanPort = 4789

const vxlanHeaderLen = 8

// VxlanSpec is one tunnel's endpoints.
type VxlanSpec struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Vni              uint32
}

type endpointKey struct {
	local netip.Addr
	port  uint16
}

type tunnelKey struct {
	remote netip.Addr
	vni    uint32
}

// vxlanEndpoint is one kernel UDP socket bound to a local tunnel address and port, shared by
// every tunnel from that address.
type vxlanEndpoint struct {
	conn *net.UDPConn

	mu      sync.RWMutex
	tunnels map[tunnelKey]uint32
}

// vxlanPort is a tunnel interface: frames written to it leave encapsulated.
type vxlanPort struct {
	plane    *Plane
	endpoint endpointKey
	tunnel   tunnelKey
	dst      *net.UDPAddr
	conn     *net.UDPConn
	header   [vxlanHeaderLen]byte
}

func (v *vxlanPort) layer() Layer { return L2 }

func (v *vxlanPort) write(frame []byte) error {
	pkt := make([]byte, vxlanHeaderLen+len(frame))
	copy(pkt, v.header[:])
	copy(pkt[vxlanHeaderLen:], frame)
	_, err := v.conn.WriteToUDP(pkt, v.dst)
	return err
}

func (v *vxlanPort) close() error {
	return v.plane.releaseTunnel(v.endpoint, v.tunnel)
}

// CreateVxlan attaches a VXLAN tunnel to swIfIndex: frames sent to it go out as
// VXLAN-in-UDP from Src to Dst, and VXLAN from Dst with the tunnel's VNI arriving at Src
// comes in on it.
func (p *Plane) CreateVxlan(swIfIndex uint32, spec VxlanSpec) error {
	if spec.SrcPort == 0 {
		spec.SrcPort = DefaultVxlanPort
	}
	if spec.DstPort == 0 {
		spec.DstPort = DefaultVxlanPort
	}
	ek := endpointKey{local: spec.Src, port: spec.SrcPort}
	tk := tunnelKey{remote: spec.Dst, vni: spec.Vni}

	p.mu.Lock()
	ep, ok := p.endpoints[ek]
	if !ok {
		conn, err := p.listenUDP(ek)
		if err != nil {
			p.mu.Unlock()
			return err
		}
		ep = &vxlanEndpoint{conn: conn, tunnels: make(map[tunnelKey]uint32)}
		p.endpoints[ek] = ep
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.vxlanReadLoop(ep)
		}()
	}
	ep.mu.Lock()
	ep.tunnels[tk] = swIfIndex
	ep.mu.Unlock()
	vp := &vxlanPort{
		plane:    p,
		endpoint: ek,
		tunnel:   tk,
		dst:      net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Dst, spec.DstPort)),
		conn:     ep.conn,
	}
	vp.header[0] = 0x08 // the I flag: the VNI is valid
	binary.BigEndian.PutUint32(vp.header[4:8], spec.Vni<<8)
	p.ports[swIfIndex] = vp
	p.counters[swIfIndex] = &portCounters{}
	p.mu.Unlock()
	return nil
}

// listenUDP opens the endpoint's socket in the simulator's namespace. IP_FREEBIND lets the
// tunnel source be an address the kernel does not (yet) have, as VPP's own stack would.
func (p *Plane) listenUDP(ek endpointKey) (*net.UDPConn, error) {
	var conn *net.UDPConn
	err := inNetns(p.ownNetns, func() error {
		lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
			var sockErr error
			err := c.Control(func(fd uintptr) {
				sockErr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
			})
			if err != nil {
				return err
			}
			return sockErr
		}}
		network := "udp4"
		if ek.local.Is6() {
			network = "udp6"
		}
		pc, err := lc.ListenPacket(context.Background(), network, netip.AddrPortFrom(ek.local, ek.port).String())
		if err != nil {
			return fmt.Errorf("binding VXLAN socket %s:%d: %w", ek.local, ek.port, err)
		}
		conn = pc.(*net.UDPConn)
		return nil
	})
	return conn, err
}

func (p *Plane) vxlanReadLoop(ep *vxlanEndpoint) {
	buf := make([]byte, maxPacket)
	for {
		n, from, err := ep.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Debug("vxlan read ended", "error", err)
			}
			return
		}
		if n < vxlanHeaderLen+14 || buf[0]&0x08 == 0 {
			continue
		}
		vni := binary.BigEndian.Uint32(buf[4:8]) >> 8
		ep.mu.RLock()
		swIfIndex, ok := ep.tunnels[tunnelKey{remote: from.Addr().Unmap(), vni: vni}]
		ep.mu.RUnlock()
		if !ok {
			continue
		}
		p.receive(swIfIndex, L2, buf[vxlanHeaderLen:n])
	}
}

// releaseTunnel forgets a tunnel and closes its endpoint's socket when it was the last one.
// Callers hold no plane lock: RemovePort and Close drop it before closing ports.
func (p *Plane) releaseTunnel(ek endpointKey, tk tunnelKey) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ep, ok := p.endpoints[ek]
	if !ok {
		return nil
	}
	ep.mu.Lock()
	delete(ep.tunnels, tk)
	empty := len(ep.tunnels) == 0
	ep.mu.Unlock()
	if !empty {
		return nil
	}
	delete(p.endpoints, ek)
	return ep.conn.Close()
}
