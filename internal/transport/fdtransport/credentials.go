package fdtransport

import (
	"context"
	"net"

	"google.golang.org/grpc/credentials"
)

type transportCredentials struct {
	credentials.TransportCredentials
	options options
}

// TransportCredentials applies creds (which may be nil) on top of a connection that passes file
// descriptors when it runs over a unix socket; over anything else it is creds alone.
func TransportCredentials(creds credentials.TransportCredentials, opts ...Option) credentials.TransportCredentials {
	return &transportCredentials{TransportCredentials: creds, options: optionsOf(opts)}
}

// ClientHandshake and ServerHandshake hold none of the descriptors the peer sends until the
// handshake is done: before it, the peer is anyone who can reach the socket.
func (c *transportCredentials) ClientHandshake(ctx context.Context, authority string, rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn := wrap(rawConn, c.options, c.speaksTLS())
	if c.TransportCredentials == nil {
		admit(conn, nil)
		return conn, nil, nil
	}
	secured, authInfo, err := c.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		_ = conn.Close()
		return secured, authInfo, err
	}
	admit(conn, authInfo)
	return secured, authInfo, nil
}

func (c *transportCredentials) ServerHandshake(rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn := wrap(rawConn, c.options, c.speaksTLS())
	if c.TransportCredentials == nil {
		admit(conn, nil)
		return conn, nil, nil
	}
	secured, authInfo, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		_ = conn.Close()
		return secured, authInfo, err
	}
	admit(conn, authInfo)
	return secured, authInfo, nil
}

func (c *transportCredentials) speaksTLS() bool {
	return c.TransportCredentials != nil && c.TransportCredentials.Info().SecurityProtocol == "tls"
}

func (c *transportCredentials) Clone() credentials.TransportCredentials {
	clone := &transportCredentials{options: c.options}
	if c.TransportCredentials != nil {
		clone.TransportCredentials = c.TransportCredentials.Clone()
	}
	return clone
}

func (c *transportCredentials) Info() credentials.ProtocolInfo {
	if c.TransportCredentials == nil {
		return credentials.ProtocolInfo{}
	}
	return c.TransportCredentials.Info()
}

//nolint:staticcheck // part of credentials.TransportCredentials, deprecated there
func (c *transportCredentials) OverrideServerName(name string) error {
	if c.TransportCredentials == nil {
		return nil
	}
	return c.TransportCredentials.OverrideServerName(name) //nolint:staticcheck
}
