package vppsimtest

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Ping sends ICMP echo requests from src inside ns to dst until one is answered or timeout
// passes. It returns nil on the first matching reply.
func Ping(ns *Netns, src, dst netip.Addr, timeout time.Duration) error {
	network, proto := "ip4:icmp", 1
	var reqType icmp.Type = ipv4.ICMPTypeEcho
	var replyType icmp.Type = ipv4.ICMPTypeEchoReply
	if dst.Is6() {
		network, proto = "ip6:ipv6-icmp", 58
		reqType, replyType = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	var conn *icmp.PacketConn
	if err := ns.Do(func() error {
		c, err := icmp.ListenPacket(network, src.String())
		conn = c
		return err
	}); err != nil {
		return fmt.Errorf("icmp socket in %s: %w", ns.Name, err)
	}
	defer func() { _ = conn.Close() }()

	idBytes := make([]byte, 2)
	_, _ = rand.Read(idBytes)
	id := int(binary.BigEndian.Uint16(idBytes))
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 1500)
	for seq := 1; time.Now().Before(deadline); seq++ {
		msg := icmp.Message{Type: reqType, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("vppsim")}}
		wire, err := msg.Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := conn.WriteTo(wire, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
			return fmt.Errorf("sending echo to %s: %w", dst, err)
		}
		wait := time.Now().Add(300 * time.Millisecond)
		if wait.After(deadline) {
			wait = deadline
		}
		_ = conn.SetReadDeadline(wait)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				break // timed out: send the next echo
			}
			reply, err := icmp.ParseMessage(proto, buf[:n])
			if err != nil || reply.Type != replyType {
				continue
			}
			echo, ok := reply.Body.(*icmp.Echo)
			if ok && echo.ID == id && from.String() == dst.String() {
				return nil
			}
		}
	}
	return errors.New("no echo reply from " + dst.String() + " within " + timeout.String())
}
