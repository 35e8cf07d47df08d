package fdtransport

import (
	"net"

	"github.com/edwarnicke/grpcfd"
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

func wrap(rawConn net.Conn, o options) net.Conn {
	raw, ok := rawConn.(unixConn)
	if !ok {
		return rawConn
	}
	return &conn{unixConn: raw, receiver: newReceiver(o.retention)}
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
