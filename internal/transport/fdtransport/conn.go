package fdtransport

import (
	"fmt"
	"net"
	"sync/atomic"

	"github.com/edwarnicke/grpcfd"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc/credentials"
)

// maxFDCount is how many descriptors travel with one write, and how many one read makes room for:
// grpcfd's limit, so that a grpcfd peer receives all of them.
const maxFDCount = 64

// unixConn is what descriptor passing needs of the raw connection (*net.UnixConn).
type unixConn interface {
	net.Conn
	WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error)
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
}

// conn is a unix socket connection that sends and receives descriptors beside its bytes. It is
// its own RemoteAddr, which is how grpcfd.FromContext finds it in a call's peer.
type conn struct {
	unixConn
	sender
	receiver
}

var _ grpcfd.FDTransceiver = (*conn)(nil)

// wrap makes rawConn pass descriptors; none it receives is held before admit. tlsHandshake keeps
// the handshake's reads within TLS records (see recordFraming).
func wrap(rawConn net.Conn, o options, tlsHandshake bool) net.Conn {
	raw, ok := rawConn.(unixConn)
	if !ok {
		return rawConn
	}
	c := &conn{unixConn: raw, receiver: newReceiver(o)}
	if tlsHandshake {
		c.framing = &recordFraming{}
	}
	return c
}

// admit lets conn hold what its peer sends from now on: the handshake is done, authInfo names
// the peer. A peer without a SPIFFE ID (no TLS) is this connection alone.
func admit(wrapped net.Conn, authInfo credentials.AuthInfo) {
	c, ok := wrapped.(*conn)
	if !ok {
		return
	}
	peer := spiffeIDOf(authInfo)
	if peer == "" {
		peer = fmt.Sprintf("unidentified peer on connection #%d", connections.Add(1))
	}
	c.admit(peer)
}

// connections numbers the connections whose peer has no SPIFFE ID.
var connections atomic.Uint64

func spiffeIDOf(authInfo credentials.AuthInfo) string {
	info, ok := authInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return ""
	}
	id, err := x509svid.IDFromCert(info.State.PeerCertificates[0])
	if err != nil {
		return ""
	}
	return id.String()
}

func (c *conn) Write(b []byte) (int, error) {
	return c.sender.write(c.unixConn, b)
}

func (c *conn) Read(b []byte) (int, error) {
	return c.receiver.read(c.unixConn, b)
}

// Close closes the socket, every descriptor still waiting to be sent or claimed, and ends every
// wait for one.
func (c *conn) Close() error {
	err := c.unixConn.Close()
	c.sender.close()
	c.receiver.close()
	return err
}

func (c *conn) RemoteAddr() net.Addr {
	return c
}

func (c *conn) Network() string {
	return c.unixConn.RemoteAddr().Network()
}

func (c *conn) String() string {
	return c.unixConn.RemoteAddr().String()
}
