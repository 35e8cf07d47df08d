package liveness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// DefaultTimeout bounds one check; the probe's timeoutSeconds leaves room around it.
const DefaultTimeout = 2 * time.Second

// Check opens a connection to the forwarder's NSM API at listenOn (NSM_LISTEN_ON) and starts a
// TLS handshake without a client certificate. The server answering it, with its certificate or
// with the alert that refuses a client without one, shows the process accepts and serves
// connections; nothing of this needs an SVID on the probing side, so the SPIRE agent can be
// away. A refused, silent or non-TLS endpoint fails.
func Check(ctx context.Context, listenOn *url.URL, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	network, address, err := dialTarget(listenOn)
	if err != nil {
		return err
	}
	conn, err := new(net.Dialer).DialContext(ctx, network, address)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", listenOn, err)
	}
	defer func() { _ = conn.Close() }()
	// The forwarder's certificate names a SPIFFE ID, not a host: there is nothing to verify it
	// against here, and only the server's answer matters.
	client := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // see above
	err = client.HandshakeContext(ctx)
	var opErr *net.OpError
	switch {
	case err == nil && len(client.ConnectionState().PeerCertificates) > 0:
		return nil // TLS 1.3: the server sent its certificate; it refuses ours after this
	case err == nil:
		return fmt.Errorf("%s completed a TLS handshake without a certificate", listenOn)
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return nil // TLS 1.2: the server answered, refusing a client without a certificate
	default:
		return fmt.Errorf("TLS handshake with %s: %w", listenOn, err)
	}
}

func dialTarget(u *url.URL) (network, address string, err error) {
	switch {
	case u.Scheme == "unix" && u.Path != "":
		return "unix", u.Path, nil
	case u.Scheme == "tcp" && u.Host != "":
		return "tcp", u.Host, nil
	}
	return "", "", fmt.Errorf("cannot probe %q: want unix:///path or tcp://host:port", u.String())
}
